/**
 * The planner's statistics of the columns that can hold people's words, off
 * (this version: migration 0025 sets their statistics target to 0) and on (as
 * before it), in a benchmark's own database, so that `retrieval` and `turns`
 * can measure both in one run (`--statistics`). The columns are
 * @roster/memory's `erasedPlaces`, the list the migration and the erase job
 * follow.
 */
import type { Database, Transaction } from '@roster/db';
import { erasedPlaces } from '@roster/memory';

export const statisticsConfigurations = ['without', 'with'] as const;
export type StatisticsConfiguration = (typeof statisticsConfigurations)[number];

export const statisticsLabels: Record<StatisticsConfiguration, string> = {
  without: 'word columns without statistics (this version)',
  with: 'word columns with statistics (as before migration 0025)',
};

/** `table.column` split, each checked to be a plain identifier so that it can go into a statement as it is. */
export const wordColumns = erasedPlaces.map((place) => {
  const [table = '', column = ''] = place.split('.');
  if (!/^[a-z_][a-z0-9_]*$/.test(table) || !/^[a-z_][a-z0-9_]*$/.test(column)) throw new Error(`erasedPlaces holds ${place}, not table.column`);
  return { table, column };
});

/**
 * The order of the configurations in each round: alternated, so that neither
 * is always measured first (on a warmer or a quieter machine).
 */
export function roundOrder(round: number): StatisticsConfiguration[] {
  return round % 2 === 0 ? ['without', 'with'] : ['with', 'without'];
}

/**
 * Put the word columns' statistics in the configuration asked for, then
 * ANALYZE the whole database as its owner (the role that may: Postgres skips,
 * with a warning, the tables a role does not own), as turns.ts analyses its
 * bulk load and the vacuum job does. `with` sets the columns' statistics
 * target back to the default (-1) before the ANALYZE. `without` sets it to 0
 * and removes what an earlier `with` sampled (ANALYZE leaves the rows of a
 * column it no longer samples): with pg_clear_attribute_stats on Postgres 18
 * (the embedded database), by a delete from pg_statistic on an older server
 * (which needs the superuser the benchmarks connect as there). Every other
 * column is analysed in both. Returns how many word columns then hold
 * statistics (a word column of an empty table has none either way).
 */
export async function applyStatistics(database: Database, configuration: StatisticsConfiguration): Promise<number> {
  await database.ownerSession(`bench: ${statisticsLabels[configuration]}, then analyze`, async (session) => {
    const { rows } = await session.query<{ clearable: boolean }>(
      `select to_regprocedure('pg_catalog.pg_clear_attribute_stats(text,text,text,boolean)') is not null as clearable`,
    );
    const clearable = rows[0]?.clearable === true;
    for (const { table, column } of wordColumns) {
      await session.query(`alter table public.${table} alter column ${column} set statistics ${configuration === 'with' ? -1 : 0}`);
      if (configuration === 'with') continue;
      if (clearable) await session.query(`select pg_catalog.pg_clear_attribute_stats('public', $1, $2, false)`, [table, column]);
      else {
        await session.query(
          `delete from pg_catalog.pg_statistic
           where starelid = $1::regclass and staattnum = (select attnum from pg_catalog.pg_attribute where attrelid = $1::regclass and attname = $2)`,
          [`public.${table}`, column],
        );
      }
    }
    await session.query('analyze');
  });
  return database.ownerScope('bench: count the word columns that hold statistics', (tx) => sampledWordColumns(tx));
}

/**
 * The word columns pg_stats shows a sample of. It hides the samples of a table
 * that forces row-level security from its owner, so such a table's forcing is
 * lifted for the look only and put back in the same transaction, as migration
 * 0025 does.
 */
async function sampledWordColumns(tx: Transaction): Promise<number> {
  let sampled = 0;
  for (const table of new Set(wordColumns.map((place) => place.table))) {
    const columns = wordColumns.filter((place) => place.table === table).map((place) => place.column);
    const forced = await tx.query<{ forced: boolean }>(`select relforcerowsecurity as forced from pg_catalog.pg_class where oid = $1::regclass`, [`public.${table}`]);
    if (forced.rows[0]?.forced === true) await tx.query(`alter table public.${table} no force row level security`);
    const { rows } = await tx.query<{ count: string }>(
      `select count(*) from pg_catalog.pg_stats where schemaname = 'public' and tablename = $1 and attname = any($2::text[])`,
      [table, columns],
    );
    if (forced.rows[0]?.forced === true) await tx.query(`alter table public.${table} force row level security`);
    sampled += Number(rows[0]?.count ?? 0);
  }
  return sampled;
}
