import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forgetPlaces } from './forget-places.js';

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
