import fs from 'node:fs';
import path from 'node:path';
import type { Config, InstallationKey } from '@roster/config';
import { takeDatabaseImage, writeBackupFile, type BackupHead, type BackupHeader, type Database, type TombstoneRecord } from '@roster/db';
import { bindInstallationKey, createAuditLog, tombstoneMatcher, type Memory } from '@roster/memory';

export interface TakeBackupOptions {
  config: Pick<Config, 'DATABASE_URL' | 'ROSTER_DATA_DIR'>;
  database: Database;
  key: InstallationKey;
  file: string;
  /** Leave the file unsealed (anyone who can read it reads every word in it). */
  plain?: boolean;
}

/** The audit chains' heads, by agent name, as `roster audit verify --expect` takes them. */
export async function auditHeads(database: Database, key: InstallationKey): Promise<BackupHead[]> {
  const heads = await createAuditLog({ database, key }).heads();
  const names = await database.adminScope('backup: name the agents of the audit heads', async (tx) => {
    const { rows } = await tx.query<{ id: string; name: string }>('select id, name from agents');
    return new Map(rows.map((row) => [row.id, row.name]));
  });
  return heads
    .map((head) => ({ agent: names.get(head.agentId) ?? head.agentId, agentId: head.agentId, head: `${head.seq}:${head.hash}` }))
    .sort((a, b) => a.agent.localeCompare(b.agent));
}

/** The latest migration the database has. */
export async function schemaVersion(database: Database): Promise<number> {
  return database.adminScope('backup: read the schema version', async (tx) => {
    const { rows } = await tx.query<{ version: number | null }>('select max(version) as version from roster_migrations');
    return Number(rows[0]?.version ?? 0);
  });
}

/**
 * Take a backup of the running database into `file` (mode 600). The heads
 * are read before the copy, so the copy holds them (a chain only grows).
 */
export async function takeBackup(options: TakeBackupOptions): Promise<BackupHeader> {
  const { database, key } = options;
  await bindInstallationKey(database, key);
  const version = await schemaVersion(database);
  const heads = await auditHeads(database, key);
  const takenAt = new Date();
  const started = performance.now();
  const content = await takeDatabaseImage(options.config, database);
  const tookMs = Math.round(performance.now() - started);
  return writeBackupFile(
    options.file,
    { schemaVersion: version, database: database.kind, body: database.kind === 'embedded' ? 'pglite-image' : 'pg-dump-sql', takenAt: takenAt.toISOString(), tookMs, heads },
    content,
    key,
    { plain: options.plain === true },
  );
}

/** The backups the nightly job writes: `roster-YYYYMMDDTHHMMSSmmmZ.backup`, so that names sort as times. */
const nightlyPattern = /^roster-\d{8}T\d{9}Z\.backup$/;

/** Take the nightly backup into `dir` (made 700 if missing) and keep the newest `keep` of the files named so; nothing else there is touched. */
export async function takeNightlyBackup(options: Omit<TakeBackupOptions, 'file' | 'plain'> & { dir: string; keep: number }): Promise<{ file: string; header: BackupHeader; removed: string[] }> {
  fs.mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  const stamp = new Date().toISOString().replace(/[-:.]/g, '');
  const file = path.join(options.dir, `roster-${stamp}.backup`);
  const header = await takeBackup({ ...options, file });
  const ours = fs.readdirSync(options.dir).filter((name) => nightlyPattern.test(name)).sort();
  const removed = ours.slice(0, Math.max(0, ours.length - options.keep));
  for (const name of removed) fs.rmSync(path.join(options.dir, name), { force: true });
  return { file, header, removed };
}

export interface ReplayReport {
  /** Tombstones of the source this database did not hold. */
  missing: number;
  /** Facts forgotten again here because of them. */
  forgotten: number;
  /** Tombstones whose agent or person this database does not have (made after the backup): nothing here to forget. */
  unmatched: number;
}

/**
 * Re-apply the forgets of a newer database: each of its tombstones that this
 * one lacks (ids are kept by a restore) forgets here, through memory's own
 * forget, the fact it names and every fact of the same agent and person its
 * keyed hash matches; the tombstone is then kept here too, under its own id,
 * so the words are not learned again and a second replay does nothing. A
 * lifted tombstone (the person said it again, on purpose) is not replayed.
 */
export async function replayForgets(database: Database, memory: Memory, key: InstallationKey, tombstones: readonly TombstoneRecord[]): Promise<ReplayReport> {
  const report: ReplayReport = { missing: 0, forgotten: 0, unmatched: 0 };
  const present = await database.adminScope('restore: the tombstones already here', async (tx) => {
    const { rows } = await tx.query<{ id: string }>('select id::text from tombstones');
    return new Set(rows.map((row) => row.id));
  });
  const actor = { actor: { kind: 'owner' as const, id: 'restore' }, channel: 'cli' };
  for (const tombstone of tombstones) {
    if (present.has(tombstone.id) || tombstone.liftedAt !== null) continue;
    report.missing += 1;
    const candidates = await database.adminScope('restore: facts a newer tombstone covers', async (tx) => {
      const known = await tx.query<{ agent: boolean; person: boolean }>(
        'select exists (select 1 from agents where id = $1) as agent, ($2::uuid is null or exists (select 1 from people where id = $2)) as person',
        [tombstone.agentId, tombstone.personId],
      );
      if (known.rows[0]?.agent !== true || known.rows[0]?.person !== true) return null;
      const { rows } = await tx.query<{ id: string; content: string }>(
        `select id::text, content from facts where agent_id = $1 and person_id is not distinct from $2 and trust <> 'forgotten' and content <> ''
         order by recorded_at`,
        [tombstone.agentId, tombstone.personId],
      );
      return rows;
    });
    if (candidates === null) {
      report.unmatched += 1;
      continue;
    }
    const row = { content_hash: tombstone.contentHash, minhash: tombstone.minhash, hash_kind: tombstone.hashKind };
    const covered = candidates.filter((fact) => fact.id === tombstone.factId || tombstoneMatcher(key, fact.content)(row)).map((fact) => fact.id);
    for (const factId of covered) {
      // A fact forgotten with an earlier one of its chain is already gone.
      const still = await database.adminScope('restore: is the fact still remembered', async (tx) => (await tx.query(`select 1 from facts where id = $1 and trust <> 'forgotten'`, [factId])).rowCount === 1);
      if (!still) continue;
      await memory.forget(await memory.scopeOf(tombstone.agentId, factId), factId, actor);
      report.forgotten += 1;
    }
    await database.adminScope('restore: keep a newer tombstone', async (tx) => {
      const factHere = tombstone.factId !== null && (await tx.query('select 1 from facts where id = $1', [tombstone.factId])).rowCount === 1;
      await tx.query(
        `insert into tombstones (id, agent_id, person_id, fact_id, content_hash, minhash, hash_kind, source_message_ids, created_at)
         values ($1, $2, $3, $4, $5, $6::bigint[], $7, $8::uuid[], $9) on conflict (id) do nothing`,
        [tombstone.id, tombstone.agentId, tombstone.personId, factHere ? tombstone.factId : null, tombstone.contentHash, tombstone.minhash, tombstone.hashKind, tombstone.sourceMessageIds, tombstone.createdAt],
      );
    });
  }
  return report;
}
