import type { Database, Scope } from '@roster/db';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createHashingEmbedder, createMemory, type Memory, type Provenance } from '@roster/memory';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eraseForgotten } from './erase.js';

/**
 * The erase job over a real database (PGlite in memory, or the server
 * Postgres of TEST_DATABASE_URL), fed by real forgets through memory's API.
 * tests/forget-disk.test.ts scans the files of a data folder after it.
 */

let test: TestDatabase;
let database: Database;
let memory: Memory;
let ada: Scope;
let bob: Scope;

beforeEach(async () => {
  test = await openTestDatabase();
  database = test.database;
  const ids = await database.adminScope('test: seed an agent and two people', async (tx) => {
    const agent = await tx.query<{ id: string }>(`insert into agents (name, job) values ('Scout', 'finds things') returning id`);
    const people = await tx.query<{ id: string; name: string }>(`insert into people (name, role) values ('Ada', 'owner'), ('Bob', 'member') returning id, name`);
    return { agent: agent.rows[0]!.id, ada: people.rows.find((row) => row.name === 'Ada')!.id, bob: people.rows.find((row) => row.name === 'Bob')!.id };
  });
  ada = { agentId: ids.agent, personId: ids.ada, audience: 'private' };
  bob = { agentId: ids.agent, personId: ids.bob, audience: 'private' };
  memory = createMemory({ database, embedder: createHashingEmbedder() });
  await memory.prepare();
});
afterEach(async () => {
  await test.cleanup();
});

const said = (scope: Scope): Provenance => ({ actor: { kind: 'person', id: scope.personId! }, channel: 'cli', explicit: true });

async function tell(scope: Scope, content: string): Promise<string> {
  return (await memory.remember(scope, { content, provenance: said(scope) })).fact.id;
}

/** The erase rows of the outbox: their key, owner and payload. */
async function eraseRows() {
  return database.adminScope('test: read the erase jobs of the outbox', async (tx) => {
    const { rows } = await tx.query<{ id: string; dedupe_key: string; agent_id: string | null; person_id: string | null; payload: { tables: string[] } }>(
      `select id, dedupe_key, agent_id, person_id, payload from outbox where queue = 'erase' order by created_at, id`,
    );
    return rows;
  });
}

/** The file a table's rows live in: a rewrite gives it a new one. */
async function fileOf(table: string): Promise<string> {
  return database.ownerScope('test: read where a table lives', async (tx) => {
    const { rows } = await tx.query<{ file: string }>(`select pg_relation_filenode($1::regclass)::text as file`, [table]);
    return rows[0]!.file;
  });
}

describe('the erase job', () => {
  it('is queued once for a burst of forgets, rewrites the tables they reached, and a forget after it queues the next', async () => {
    const cafe = await tell(ada, 'my favourite cafe is Zephyrquokka Roasters');
    const locker = await tell(ada, 'my locker is the one by the window');
    const dog = await tell(bob, 'my dog is called Biscuitfang');
    // Positive control: remembering queues no erase.
    expect(await eraseRows()).toEqual([]);

    await memory.forget(ada, cafe, said(ada));
    await memory.forget(bob, dog, said(bob));
    const [pending, ...others] = await eraseRows();
    expect(others).toEqual([]);
    // One erase for both, belonging to no agent or person, naming tables and nothing they said.
    expect(pending).toMatchObject({ dedupe_key: 'erase:pending', agent_id: null, person_id: null });
    expect(pending!.payload.tables).toEqual(expect.arrayContaining(['facts', 'fact_embeddings', 'messages', 'learning_events', 'episodes', 'lessons', 'outbox']));
    expect(JSON.stringify(pending!.payload)).not.toMatch(/zephyrquokka|biscuitfang/i);

    const before = await fileOf('facts');
    const report = await eraseForgotten(database, { tables: pending!.payload.tables });
    expect(report).toMatchObject({ database: test.kind, queued: 1, ignored: [] });
    expect(report.tables).toEqual([...pending!.payload.tables].sort());
    expect(JSON.stringify(report)).not.toMatch(/zephyrquokka|biscuitfang/i);
    if (test.kind === 'embedded') {
      expect(await fileOf('facts')).not.toBe(before);
      expect(report.walSegmentsRemoved).toBeGreaterThanOrEqual(1);
    } else {
      // A server Postgres vacuums in place: no table is rewritten, and its WAL is its own.
      expect(await fileOf('facts')).toBe(before);
      expect(report.walSegmentsRemoved).toBeNull();
    }
    expect((await eraseRows()).map((row) => row.dedupe_key)).toEqual([`erase:done:${pending!.id}`]);

    // What was not forgotten is untouched.
    expect((await memory.get(ada, locker)).content).toBe('my locker is the one by the window');

    // The next forget queues the next erase.
    await memory.forget(ada, locker, said(ada));
    const rows = await eraseRows();
    expect(rows.map((row) => row.dedupe_key)).toEqual([`erase:done:${pending!.id}`, 'erase:pending']);
    // Nothing was pending for a run by hand to take over but that one; it covers every table that holds people's words.
    const byHand = await eraseForgotten(database);
    expect(byHand.queued).toBe(1);
    expect(byHand.tables).toEqual(expect.arrayContaining(['facts', 'messages', 'memory_events', 'tombstones', 'conversations']));
    expect(byHand.tables).not.toContain('agents');
  });

  it('leaves alone a name that is not a table holding people’s words', async () => {
    const report = await eraseForgotten(database, { tables: ['facts', 'agents', 'no_such_table'] });
    expect(report).toMatchObject({ tables: ['facts'], ignored: ['agents', 'no_such_table'], queued: 0 });
  });
});
