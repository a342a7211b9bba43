import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { redactUrl, type Config, type Logger } from '@roster/config';
import { RosterError } from '@roster/errors';
import pg from 'pg';
import { createPoolDatabase, type Database } from './database.js';
import { acquireDataDirLock } from './data-dir-lock.js';
import { pglitePool } from './pglite-connection.js';

/** The oldest pgvector Roster accepts: iterative index scans arrived in 0.8. */
export const minimumPgvector = '0.8.0';

export interface OpenDatabaseOptions {
  config: Pick<Config, 'DATABASE_URL' | 'ROSTER_DATA_DIR'>;
  logger: Logger;
}

/**
 * Open the product's database: the server Postgres of DATABASE_URL, checked
 * for pgvector, or else the embedded one in ROSTER_DATA_DIR.
 */
export async function openDatabase({ config, logger }: OpenDatabaseOptions): Promise<Database> {
  const log = logger.child({ component: 'db' });
  if (config.DATABASE_URL !== undefined) return openServerDatabase(config.DATABASE_URL, log);
  return openEmbeddedDatabase(embeddedDataDir(config.ROSTER_DATA_DIR), log);
}

/** Where the embedded database keeps its files inside the data folder. */
export function embeddedDataDir(dataDir: string): string {
  return path.join(dataDir, 'pglite');
}

/**
 * Start PGlite with pgvector on a folder (or `memory://`). The folder is
 * locked for this process: PGlite is one process's database, and a second
 * writer would corrupt it.
 */
export async function openPglite(dataDir: string): Promise<{ pglite: PGlite; release: () => Promise<void> }> {
  let unlock = async () => {};
  if (!dataDir.startsWith('memory://')) {
    fs.mkdirSync(dataDir, { recursive: true });
    unlock = acquireDataDirLock(dataDir);
  }
  try {
    const pglite = await PGlite.create(dataDir, { extensions: { vector } });
    return {
      pglite,
      release: async () => {
        try {
          await pglite.close();
        } finally {
          await unlock();
        }
      },
    };
  } catch (error) {
    await unlock();
    throw new RosterError(
      'database_unavailable',
      `The embedded database in ${dataDir} could not be opened: ${(error as Error).message}. Move the folder aside to start afresh, or set DATABASE_URL.`,
      { cause: error },
    );
  }
}

/** The embedded database: PGlite in process, reached through node-postgres. */
export async function openEmbeddedDatabase(dataDir: string, logger?: Logger): Promise<Database> {
  const { pglite, release } = await openPglite(dataDir);
  const pool = pglitePool(pglite);
  return createPoolDatabase({
    kind: 'embedded',
    location: dataDir,
    pool,
    onClose: release,
    onAdmin: (reason) => logger?.debug({ reason }, 'admin scope'),
  });
}

/** A server Postgres; refuses one without pgvector 0.8 or newer. */
export async function openServerDatabase(connectionString: string, logger?: Logger): Promise<Database> {
  const shown = redactUrl(connectionString);
  const probe = new pg.Client({ connectionString, connectionTimeoutMillis: 5000 });
  let isPglite = false;
  try {
    await probe.connect();
  } catch (error) {
    throw new RosterError(
      'database_unreachable',
      `DATABASE_URL is not reachable (${shown}): ${(error as Error).message}. Start Postgres, or unset DATABASE_URL to use the embedded database.`,
      { cause: error, retryable: true },
    );
  }
  try {
    const { rows } = await probe.query<{ version: string; installed: string | null; available: string | null }>(
      `select version() as version,
              (select extversion from pg_extension where extname = 'vector') as installed,
              (select default_version from pg_available_extensions where name = 'vector') as available`,
    );
    const row = rows[0];
    isPglite = row?.version.includes('PGlite') ?? false;
    const version = row?.installed ?? row?.available ?? null;
    if (version === null) {
      throw new RosterError(
        'pgvector_missing',
        `The Postgres at ${shown} has no pgvector extension. Install pgvector ${minimumPgvector} or newer on that server (the postgresql-NN-pgvector package, or the pgvector/pgvector image), then run roster migrate.`,
      );
    }
    if (compareVersions(version, minimumPgvector) < 0) {
      throw new RosterError(
        'pgvector_outdated',
        `The Postgres at ${shown} has pgvector ${version}; Roster needs ${minimumPgvector} or newer. Upgrade the pgvector package, then run ALTER EXTENSION vector UPDATE.`,
      );
    }
  } finally {
    await probe.end();
  }
  // A served embedded database is one session: more than one connection would interleave transactions.
  const pool = new pg.Pool({ connectionString, max: isPglite ? 1 : 10, connectionTimeoutMillis: 10_000 });
  pool.on('error', (error) => logger?.warn({ err: error }, 'idle database connection failed'));
  return createPoolDatabase({
    kind: 'server',
    location: shown,
    pool,
    onAdmin: (reason) => logger?.debug({ reason }, 'admin scope'),
  });
}

/** Compare dotted versions numerically: `0.10.0` is newer than `0.8.7`. */
export function compareVersions(left: string, right: string): number {
  const a = left.split('.').map((part) => Number.parseInt(part, 10) || 0);
  const b = right.split('.').map((part) => Number.parseInt(part, 10) || 0);
  for (let index = 0; index < Math.max(a.length, b.length); index += 1) {
    const difference = (a[index] ?? 0) - (b[index] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}
