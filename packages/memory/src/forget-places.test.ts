import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { erasedPlaces, forgetPlaces } from './forget-places.js';

let test: TestDatabase;

beforeAll(async () => {
  test = await openTestDatabase();
});

afterAll(async () => {
  await test.cleanup();
});

/** Every column of every table that can hold text, as `table.column`. */
async function textColumns(): Promise<string[]> {
  return test.database.ownerScope('test: the columns that can hold text', async (tx) => {
    const { rows } = await tx.query<{ place: string }>(
      `select c.table_name || '.' || c.column_name as place
       from information_schema.columns c
       join information_schema.tables t on t.table_name = c.table_name and t.table_schema = c.table_schema
       where c.table_schema = current_schema() and t.table_type = 'BASE TABLE'
         and c.data_type in ('text', 'character varying', 'character', 'json', 'jsonb', 'tsvector', 'ARRAY', 'USER-DEFINED', 'bytea', 'xml')
       order by 1`,
    );
    return rows.map((row) => row.place);
  });
}

describe('the list of places a forget reaches', () => {
  it('names every column of the schema that can hold text, and nothing that is not there', async () => {
    const columns = await textColumns();
    // Positive control: the scan sees the columns that certainly hold words.
    expect(columns).toEqual(expect.arrayContaining(['facts.content', 'messages.content', 'lessons.text', 'mirror_runs.reason']));
    const unlisted = columns.filter((column) => !(column in forgetPlaces));
    const stale = Object.keys(forgetPlaces).filter((place) => !columns.includes(place));
    expect(unlisted, 'columns of text that no entry of forgetPlaces decides on').toEqual([]);
    expect(stale, 'entries of forgetPlaces whose column is gone').toEqual([]);
  });

  it('notices a new column of text added without an entry', async () => {
    await test.database.ownerScope('test: a new column of text', (tx) => tx.query('alter table agents add column motto text'));
    try {
      const columns = await textColumns();
      expect(columns.filter((column) => !(column in forgetPlaces))).toEqual(['agents.motto']);
    } finally {
      await test.database.ownerScope('test: drop it again', (tx) => tx.query('alter table agents drop column motto'));
    }
  });
});

/** The statistics target of each column of `places` (`table.column`): 0 keeps no planner samples; null or -1 is the default. */
async function statisticsTargets(places: readonly string[]): Promise<Record<string, number | null>> {
  return test.database.ownerScope('test: read the columns’ statistics targets', async (tx) => {
    const { rows } = await tx.query<{ place: string; target: number | null }>(
      `select c.relname || '.' || a.attname as place, a.attstattarget::int as target
       from pg_attribute a join pg_class c on c.oid = a.attrelid
       where c.relnamespace = current_schema()::regnamespace and c.relname || '.' || a.attname = any($1) and not a.attisdropped`,
      [places],
    );
    return Object.fromEntries(rows.map((row) => [row.place, row.target]));
  });
}

describe('the planner’s statistics', () => {
  it('keep no samples of a column a forget erases, and keep them for the rest', async () => {
    const targets = await statisticsTargets(erasedPlaces);
    expect(Object.keys(targets).sort()).toEqual([...erasedPlaces].sort());
    const sampled = Object.entries(targets).filter(([, target]) => target !== 0);
    expect(sampled, 'columns that can hold people’s words yet keep statistics (ANALYZE would copy their words into pg_statistic)').toEqual([]);
    // Positive control: text columns that hold no one's words keep the default.
    const others = await statisticsTargets(['agents.job', 'conversations.external_id', 'facts.category']);
    expect(Object.values(others)).toHaveLength(3);
    for (const target of Object.values(others)) expect(target === null || target === -1).toBe(true);
  });

  it('notices a column a forget erases with its statistics turned back on', async () => {
    await test.database.ownerScope('test: turn statistics on', (tx) => tx.query('alter table messages alter column content set statistics 100'));
    try {
      const targets = await statisticsTargets(erasedPlaces);
      expect(Object.entries(targets).filter(([, target]) => target !== 0)).toEqual([['messages.content', 100]]);
    } finally {
      await test.database.ownerScope('test: turn them off again', (tx) => tx.query('alter table messages alter column content set statistics 0'));
    }
  });
});
