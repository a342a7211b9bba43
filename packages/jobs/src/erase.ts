import type { Logger } from '@roster/config';
import type { Database, Transaction } from '@roster/db';
import { RosterError } from '@roster/errors';

/**
 * What an erase did: table names and counts, never a word of what was
 * forgotten (a job's result is kept in Redis).
 */
export interface EraseReport {
  /**
   * `embedded`: the tables were rewritten (VACUUM FULL: heap, TOAST and
   * indexes) and the WAL segments written before were deleted. `server`: the
   * tables were vacuumed and analysed; the server keeps its own WAL, replicas
   * and backups.
   */
  database: 'embedded' | 'server';
  /** The tables rewritten or vacuumed. */
  tables: string[];
  /** Names asked for that are not tables holding people's words, owned here: left alone. */
  ignored: string[];
  /** Erases that forgets had queued, carried out by this run (usually one: a burst of forgets gathers in one). */
  queued: number;
  /** WAL segment files deleted (embedded); null on a server. */
  walSegmentsRemoved: number | null;
}

export interface EraseOptions {
  /** The tables forgets reached. Without them (a run by hand): every table that holds people's words. */
  tables?: readonly string[];
  logger?: Logger;
  /** Told after each table; a stopping worker interrupts here, with the tables so far done. */
  onProgress?: (progress: { tables: number; of: number }) => Promise<void>;
}

/** A WAL segment file's name: timeline, log and segment, 8 hex digits each. */
const segmentName = /^[0-9A-F]{24}$/;

/**
 * Take the words of forgotten facts off the disk. A forget empties or
 * deletes rows, but their old versions stay in the pages of the table, its
 * TOAST and its indexes, and in the WAL, until something rewrites them (the
 * embedded database runs no autovacuum, and a plain VACUUM leaves the bytes
 * in the pages' free space).
 *
 * On the embedded database each table is rewritten (VACUUM FULL), then the
 * WAL moves to a new segment and a checkpoint deletes the older ones (the
 * embedded database never recycles a segment; see `openPglite`). Every file of
 * the data folder then holds only live rows. On a server Postgres a rewrite
 * would lock each table for its whole length, so the tables are vacuumed
 * (their dead rows leave the indexes and their space is reused); the rest is
 * the server's WAL, replicas and backups (docs/operations.md), and they are
 * analysed again so that their statistics no longer sample the old rows.
 *
 * The pending erase that forgets queued (one row of the outbox, whatever
 * their number) is taken over first: a forget committed after that queues
 * the next erase. A run that fails keeps what it took over, and the next run
 * (its retry, or any later erase) carries it out.
 */
export async function eraseForgotten(database: Database, options: EraseOptions = {}): Promise<EraseReport> {
  const claimed = await database.adminScope('erase: take over the pending erase', async (tx) => {
    await tx.query(`update outbox set dedupe_key = 'erase:claimed:' || id::text where queue = 'erase' and dedupe_key = 'erase:pending'`);
    const { rows } = await tx.query<{ id: string; payload: { tables?: unknown } }>(
      `select id, payload from outbox where queue = 'erase' and dedupe_key like 'erase:claimed:%'`,
    );
    return rows;
  });
  const claimedTables = claimed.flatMap((row) => (Array.isArray(row.payload.tables) ? row.payload.tables.filter((name): name is string => typeof name === 'string') : []));

  const report = await database.ownerSession('erase: rewrite the tables forgets reached', async (session) => {
    const holding = await tablesHoldingWords(session);
    const asked = options.tables === undefined ? holding : [...new Set([...options.tables, ...claimedTables])];
    const tables = asked.filter((name) => holding.includes(name)).sort();
    const ignored = asked.filter((name) => !holding.includes(name)).sort();
    const embedded = await isEmbedded(session);
    for (const [index, table] of tables.entries()) {
      // The names come from the catalog (checked just above), never from a caller as they are.
      // A server's statistics sample column values (pg_statistic); analysing again replaces the samples taken before the forget.
      await session.query(embedded ? `vacuum (full) public."${table}"` : `vacuum (analyze) public."${table}"`);
      await options.onProgress?.({ tables: index + 1, of: tables.length });
    }
    const walSegmentsRemoved = embedded ? await retireWal(session) : null;
    return { database: embedded ? ('embedded' as const) : ('server' as const), tables, ignored, walSegmentsRemoved };
  });

  if (claimed.length > 0) {
    await database.adminScope('erase: mark the pending erase done', (tx) =>
      tx.query(`update outbox set dedupe_key = 'erase:done:' || id::text where id = any($1)`, [claimed.map((row) => row.id)]),
    );
  }
  const result: EraseReport = { ...report, queued: claimed.length };
  if (result.database === 'embedded') options.logger?.info({ tables: result.tables, walSegmentsRemoved: result.walSegmentsRemoved }, 'erase: tables rewritten, older WAL deleted');
  else {
    options.logger?.info(
      { tables: result.tables },
      'erase: tables vacuumed; on a server Postgres the old bytes stay in free space until reused, and in WAL archives, replicas and backups (docs/operations.md)',
    );
  }
  return result;
}

/**
 * The tables of the schema that hold people's words (row-level security is
 * forced on each of them: `tablesWithoutContent` lists the others) and that
 * this role owns, which VACUUM needs.
 */
async function tablesHoldingWords(session: Transaction): Promise<string[]> {
  const { rows } = await session.query<{ name: string }>(
    `select c.relname as name from pg_class c
     where c.relnamespace = 'public'::regnamespace and c.relkind = 'r' and c.relforcerowsecurity and pg_has_role(c.relowner, 'USAGE')
     order by c.relname`,
  );
  return rows.map((row) => row.name);
}

/** PGlite, opened in this process, shared through its socket, or served to a DATABASE_URL (`roster db serve`). */
async function isEmbedded(session: Transaction): Promise<boolean> {
  const { rows } = await session.query<{ embedded: boolean }>(`select version() like '%PGlite%' as embedded`);
  return rows[0]?.embedded === true;
}

async function walSegments(session: Transaction): Promise<string[]> {
  const { rows } = await session.query<{ name: string }>('select name from pg_ls_waldir()');
  return rows.map((row) => row.name).filter((name) => segmentName.test(name));
}

/**
 * Move the WAL to a new segment and checkpoint, until the only segment left
 * is one made after the erase began: every record written before (the words,
 * the old pages) is then in no file. A folder whose WAL was recycled before
 * holds renamed old segments ahead of the current one; each round passes one.
 */
async function retireWal(session: Transaction): Promise<number> {
  const recycling = await session.query<{ value: string }>(`select current_setting('wal_recycle') as value`);
  if (recycling.rows[0]?.value !== 'off') {
    throw new RosterError('erase_wal_recycled', 'The embedded database recycles WAL segments, so old records would outlive a checkpoint; reopen it with this version of Roster.');
  }
  const before = await walSegments(session);
  for (let round = 0; round <= before.length; round += 1) {
    await session.query('select pg_switch_wal()');
    await session.query('checkpoint');
    const { rows } = await session.query<{ name: string }>('select pg_walfile_name(pg_current_wal_lsn()) as name');
    const current = rows[0]?.name;
    const left = await walSegments(session);
    if (current !== undefined && !before.includes(current) && left.every((name) => name === current)) return before.length;
  }
  throw new RosterError('erase_wal_kept', 'Older WAL segments were still in the data folder after the checkpoints; the erase will be tried again.', { retryable: true });
}
