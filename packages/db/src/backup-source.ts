import fs from 'node:fs';
import path from 'node:path';
import type { InstallationKey } from '@roster/config';
import { RosterError } from '@roster/errors';
import { openBackupFile } from './backup-file.js';
import type { Database } from './database.js';
import { embeddedDataDir, openEmbeddedDatabase, openServerDatabase } from './open.js';

/** A tombstone as another database (or backup) holds it: keyed hashes and ids, never words. */
export interface TombstoneRecord {
  id: string;
  agentId: string;
  personId: string | null;
  factId: string | null;
  contentHash: string;
  minhash: string[];
  hashKind: string;
  sourceMessageIds: string[];
  createdAt: string;
  liftedAt: string | null;
}

const columns = `id::text, agent_id::text, person_id::text, fact_id::text, content_hash, minhash::text[] as minhash, hash_kind,
  source_message_ids::text[] as source_message_ids, created_at::text, lifted_at::text`;

interface Row {
  id: string;
  agent_id: string;
  person_id: string | null;
  fact_id: string | null;
  content_hash: string;
  minhash: string[];
  hash_kind: string;
  source_message_ids: string[];
  created_at: string;
  lifted_at: string | null;
}

const toRecord = (row: Row): TombstoneRecord => ({
  id: row.id,
  agentId: row.agent_id,
  personId: row.person_id,
  factId: row.fact_id,
  contentHash: row.content_hash,
  minhash: row.minhash,
  hashKind: row.hash_kind,
  sourceMessageIds: row.source_message_ids,
  createdAt: row.created_at,
  liftedAt: row.lifted_at,
});

/**
 * Every tombstone of another Roster database: a data folder (its embedded
 * database, reached through its host if it runs), a server's connection
 * string, or a backup file (opened with `key`). Read only.
 */
export async function readTombstones(source: string, key: InstallationKey): Promise<TombstoneRecord[]> {
  if (/^postgres(ql)?:\/\//.test(source)) return fromDatabase(await openServerDatabase(source));
  const stat = fs.statSync(source, { throwIfNoEntry: false });
  if (stat === undefined) throw new RosterError('replay_source_missing', `${source} is neither a data folder, a backup file nor a postgres:// connection string.`);
  if (stat.isDirectory()) {
    const folder = fs.existsSync(embeddedDataDir(source)) ? embeddedDataDir(source) : source;
    if (!fs.existsSync(path.join(folder, 'PG_VERSION'))) throw new RosterError('replay_source_missing', `${source} holds no embedded database: give the data folder (ROSTER_DATA_DIR) of the newer installation.`);
    return fromDatabase(await openEmbeddedDatabase(folder));
  }
  const { header, content } = openBackupFile(source, key);
  if (header.body === 'pg-dump-sql') return fromDump(content.toString('utf8'));
  // A copy in memory, read as its superuser: nothing of it is written anywhere.
  const [{ PGlite }, { vector }] = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite-pgvector')]);
  const pglite = await PGlite.create('memory://', { extensions: { vector }, loadDataDir: new Blob([content], { type: 'application/x-tar' }) });
  try {
    const { rows } = await pglite.query<Row>(`select ${columns} from public.tombstones order by created_at, id`);
    return rows.map(toRecord);
  } finally {
    await pglite.close();
  }
}

async function fromDatabase(database: Database): Promise<TombstoneRecord[]> {
  try {
    return await database.adminScope('restore: read the tombstones of the newer database', async (tx) => {
      const { rows } = await tx.query<Row>(`select ${columns} from tombstones order by created_at, id`);
      return rows.map(toRecord);
    });
  } finally {
    await database.close();
  }
}

/** The tombstones of a pg_dump: its COPY block of the tombstones table, in COPY's text format. */
function fromDump(sql: string): TombstoneRecord[] {
  const start = /^COPY "?public"?\."?tombstones"? \(([^)]*)\) FROM stdin;$/m.exec(sql);
  if (start === null) return [];
  const names = start[1]!.split(',').map((name) => name.trim().replaceAll('"', ''));
  const lines = sql.slice(start.index + start[0].length + 1).split('\n');
  const records: TombstoneRecord[] = [];
  const value = (text: string | undefined): string | null => (text === undefined || text === '\\N' ? null : text);
  const array = (text: string | null): string[] => (text === null || text === '{}' ? [] : text.slice(1, -1).split(','));
  for (const line of lines) {
    if (line === '\\.') break;
    const fields = line.split('\t');
    const get = (name: string) => value(fields[names.indexOf(name)]);
    records.push({
      id: get('id')!,
      agentId: get('agent_id')!,
      personId: get('person_id'),
      factId: get('fact_id'),
      contentHash: get('content_hash') ?? '',
      minhash: array(get('minhash')),
      hashKind: get('hash_kind') ?? 'sha256',
      sourceMessageIds: array(get('source_message_ids')),
      createdAt: get('created_at') ?? '',
      liftedAt: get('lifted_at'),
    });
  }
  return records;
}
