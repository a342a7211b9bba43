import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RosterError } from '@roster/errors';
import type { Database, Transaction } from './database.js';

/** One numbered `.sql` file of `migrations/`. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrationReport {
  /** The migrations this run applied, in order; empty when there was nothing to do. */
  applied: Array<{ version: number; name: string }>;
  /** The version the database is at now. */
  version: number;
}

/** The repository's `migrations/` folder, found from this package's place in it. */
export const defaultMigrationsDir = fileURLToPath(new URL('../../../migrations/', import.meta.url));

/** Any 64-bit constant works, as long as every runner uses the same one. */
const migrationLockKey = 7_305_146_318_121_961n;
const fileNamePattern = /^(\d{4})_([a-z0-9_]+)\.sql$/;

/** Read and order the migration files; a malformed or duplicate name is an error. */
export function loadMigrations(dir: string = defaultMigrationsDir): Migration[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((name) => name.endsWith('.sql'));
  } catch (error) {
    throw new RosterError('migrations_missing', `The migrations folder ${dir} cannot be read: ${(error as Error).message}.`, { cause: error });
  }
  const migrations = names.map((fileName) => {
    const match = fileNamePattern.exec(fileName);
    if (match === null) {
      throw new RosterError('migration_name_invalid', `Migration file ${fileName} must be named NNNN_words.sql (four digits, lower-case words).`);
    }
    const sql = fs.readFileSync(path.join(dir, fileName), 'utf8');
    return {
      version: Number.parseInt(match[1] ?? '', 10),
      name: fileName.replace(/\.sql$/, ''),
      sql,
      checksum: createHash('sha256').update(sql).digest('hex'),
    };
  });
  migrations.sort((a, b) => a.version - b.version);
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) {
      throw new RosterError('migration_sequence_invalid', `Migrations must be numbered 0001, 0002, … without gaps; ${migration.name} is out of sequence.`);
    }
  });
  return migrations;
}

/**
 * Bring the database to the latest migration. Each migration runs in its own
 * transaction that first takes a transaction-scoped advisory lock and then
 * reads the ledger, so runners started at the same moment apply each
 * migration exactly once. An applied migration whose file changed since is
 * refused: migrations are append-only.
 */
export async function migrate(database: Database, options: { dir?: string } = {}): Promise<MigrationReport> {
  const migrations = loadMigrations(options.dir);
  const applied: MigrationReport['applied'] = [];
  let version = 0;
  for (;;) {
    const step = await database.ownerScope('migrate', async (tx) => {
      await tx.query('select pg_advisory_xact_lock($1)', [migrationLockKey.toString()]);
      const ledger = await readLedger(tx, migrations);
      const next = migrations.find((migration) => !ledger.has(migration.version));
      if (next === undefined) return { done: true as const, version: ledger.size };
      await tx.query(next.sql);
      await tx.query('insert into roster_migrations (version, name, checksum) values ($1, $2, $3)', [
        next.version,
        next.name,
        next.checksum,
      ]);
      return { done: false as const, migration: next };
    });
    if (step.done) {
      version = step.version;
      break;
    }
    applied.push({ version: step.migration.version, name: step.migration.name });
  }
  return { applied, version };
}

async function readLedger(tx: Transaction, migrations: readonly Migration[]): Promise<Map<number, string>> {
  await tx.query(`
    create table if not exists roster_migrations (
      version integer primary key,
      name text not null,
      checksum text not null,
      applied_at timestamptz not null default now()
    )`);
  const { rows } = await tx.query<{ version: number; name: string; checksum: string }>(
    'select version, name, checksum from roster_migrations order by version',
  );
  const ledger = new Map<number, string>();
  const latest = migrations.at(-1)?.version ?? 0;
  for (const row of rows) {
    const file = migrations.find((migration) => migration.version === row.version);
    if (file === undefined) {
      throw new RosterError(
        'migration_unknown',
        `The database has migration ${row.name}, which this copy of Roster does not know (its latest is ${latest}). Run a newer Roster against it.`,
      );
    }
    if (file.checksum !== row.checksum) {
      throw new RosterError(
        'migration_changed',
        `Migration ${row.name} was edited after it was applied. Migrations are append-only: restore the file and add the change as a new migration.`,
      );
    }
    ledger.set(row.version, row.name);
  }
  return ledger;
}
