import type { Logger } from '@roster/config';
import type { Database, Transaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { erasedPlaces } from '@roster/memory';

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
  /**
   * Columns of those tables that can hold people's words whose planner
   * samples were cleared. They keep no statistics since migration 0025, so
   * there is nothing to clear unless someone turned them on by hand.
   */
  statistics: number;
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
 * the server's WAL, replicas and backups (docs/operations.md).
 *
 * The planner's statistics are a copy too: ANALYZE samples column values
 * into pg_statistic. The columns that can hold words keep no statistics
 * (migration 0025), and each erase clears any sample of them still there; on
 * the embedded database pg_statistic is then rewritten, so the bytes of
 * samples cleared before are in none of its pages. The WAL is retired last,
 * after every write of the job, so that no page image written later carries
 * an older page's bytes into the segment left in place.
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
      await session.query(embedded ? `vacuum (full) public."${table}"` : `vacuum (analyze) public."${table}"`);
      await options.onProgress?.({ tables: index + 1, of: tables.length });
    }
    const statistics = await clearWordStatistics(session, tables);
    // The cleared samples are dead rows of pg_statistic until it is rewritten; on a server it is the server's to vacuum.
    if (embedded) await session.query('vacuum (full) pg_catalog.pg_statistic');
    return { database: embedded ? ('embedded' as const) : ('server' as const), tables, ignored, statistics };
  });

  if (claimed.length > 0) {
    await database.adminScope('erase: mark the pending erase done', (tx) =>
      tx.query(`update outbox set dedupe_key = 'erase:done:' || id::text where id = any($1)`, [claimed.map((row) => row.id)]),
    );
  }
  // Last, after everything this job writes: the segment left in place then holds no image of a page written before.
  const walSegmentsRemoved = report.database === 'embedded' ? await database.ownerSession('erase: retire the older WAL', retireWal) : null;
  const result: EraseReport = { ...report, queued: claimed.length, walSegmentsRemoved };
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
 * forced on each of them: `tablesWithoutContent` lists the others), and those
 * with a column an erasure empties (`erasedPlaces`: people, whose names go
 * when a person is erased), that this role owns, which VACUUM needs.
 */
async function tablesHoldingWords(session: Transaction): Promise<string[]> {
  const { rows } = await session.query<{ name: string }>(
    `select c.relname as name from pg_class c
     where c.relnamespace = 'public'::regnamespace and c.relkind = 'r' and (c.relforcerowsecurity or c.relname = any($1)) and pg_has_role(c.relowner, 'USAGE')
     order by c.relname`,
    [[...new Set(erasedPlaces.map((place) => place.split('.')[0]!))]],
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

/**
 * Clear the planner's samples of the columns of `tables` that can hold
 * people's words (`erasedPlaces`), and turn their statistics off again if
 * someone turned them on. Postgres 18 lets the owner clear a column's
 * samples; an older server lets only a superuser touch pg_statistic, so there
 * each column is sampled once more at the smallest target (a minimum and a
 * maximum of what its rows hold now, none of it forgotten) and turned off.
 * Returns the columns cleared. (Whether a column had samples is not asked:
 * pg_stats hides them from the owner of a table that forces row-level
 * security, and pg_statistic is a superuser's.)
 */
async function clearWordStatistics(session: Transaction, tables: readonly string[]): Promise<number> {
  const places = erasedPlaces.map((place) => place.split('.') as [string, string]).filter(([table]) => tables.includes(table));
  const { rows } = await session.query<{ table_name: string; column_name: string; clearable: boolean }>(
    `select c.relname as table_name, a.attname as column_name,
            to_regprocedure('pg_catalog.pg_clear_attribute_stats(text,text,text,boolean)') is not null as clearable
     from unnest($1::text[], $2::text[]) as place (table_name, column_name)
     join pg_class c on c.relnamespace = 'public'::regnamespace and c.relname = place.table_name
     join pg_attribute a on a.attrelid = c.oid and a.attname = place.column_name and not a.attisdropped
     order by 1, 2`,
    [places.map(([table]) => table), places.map(([, column]) => column)],
  );
  for (const { table_name: table, column_name: column, clearable } of rows) {
    // The names come from the catalog, never from a caller. One transaction: a column is never left with statistics on.
    const target = `public."${table.replaceAll('"', '""')}"`;
    const name = `"${column.replaceAll('"', '""')}"`;
    await session.query('begin');
    if (clearable) {
      await session.query(`alter table ${target} alter column ${name} set statistics 0`);
      await session.query(`select pg_catalog.pg_clear_attribute_stats('public', $1, $2, false)`, [table, column]);
    } else {
      await session.query(`alter table ${target} alter column ${name} set statistics 1`);
      await session.query(`analyze ${target} (${name})`);
      await session.query(`alter table ${target} alter column ${name} set statistics 0`);
    }
    await session.query('commit');
  }
  return rows.length;
}
