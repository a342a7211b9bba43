import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database.js';
import { enqueue, outboxBacklog, type OutboxJob } from './outbox.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

let test: TestDatabase;
let db: Database;
const ids = { scout: '', coder: '', ada: '' };

async function outboxRows(): Promise<Array<{ queue: string; name: string; payload: Record<string, unknown>; dedupe_key: string; agent_id: string | null }>> {
  return db.adminScope('test: read the outbox', async (tx) => {
    const { rows } = await tx.query<{ queue: string; name: string; payload: Record<string, unknown>; dedupe_key: string; agent_id: string | null }>(
      'select queue, name, payload, dedupe_key, agent_id from outbox order by created_at, dedupe_key',
    );
    return rows;
  });
}

const extract = (dedupeKey: string, payload: Record<string, unknown>, agentId = ids.scout): OutboxJob =>
  ({ queue: 'extract', name: 'extract-conversation', payload, dedupeKey, agentId, personId: ids.ada }) as OutboxJob;

beforeAll(async () => {
  test = await openTestDatabase();
  db = test.database;
  await db.adminScope('test: seed agents and a person', async (tx) => {
    const agents = await tx.query<{ id: string; name: string }>(`insert into agents (name, job) values ('Scout', 'finds things'), ('Coder', 'writes code') returning id, name`);
    const people = await tx.query<{ id: string }>(`insert into people (name, role) values ('Ada', 'owner') returning id`);
    ids.scout = agents.rows.find((row) => row.name === 'Scout')!.id;
    ids.coder = agents.rows.find((row) => row.name === 'Coder')!.id;
    ids.ada = people.rows[0]!.id;
  });
});

afterAll(async () => {
  await test?.cleanup();
});

describe('enqueue: the one writer of the outbox', () => {
  it('writes a job in the scope’s transaction once per dedupe key, and refuses a payload its queue would not take, writing nothing', async () => {
    const scope = { agentId: ids.scout, personId: ids.ada, audience: 'private' as const };
    const conversationId = randomUUID();
    await db.withScope(scope, async (tx) => {
      await enqueue(tx, extract('test:extract:1', { conversationId, agentId: ids.scout, personId: ids.ada }));
      // The same key again (a redelivered message) is no second job.
      await enqueue(tx, extract('test:extract:1', { conversationId, agentId: ids.scout, personId: ids.ada }));
    });
    await expect(db.withScope(scope, (tx) => enqueue(tx, extract('test:extract:bad', { conversationId: 'not-an-id' })))).rejects.toMatchObject({ code: 'job_payload_invalid' });
    await expect(db.withScope(scope, (tx) => enqueue(tx, { ...extract('test:mail', {}), queue: 'mail' } as unknown as OutboxJob))).rejects.toMatchObject({ code: 'job_unknown' });
    const rows = await outboxRows();
    expect(rows).toEqual([
      { queue: 'extract', name: 'extract-conversation', payload: { conversationId, agentId: ids.scout, personId: ids.ada }, dedupe_key: 'test:extract:1', agent_id: ids.scout },
    ]);
    expect(await outboxBacklog(db)).toMatchObject([{ queue: 'extract', pending: 1 }]);
  });

  it('a scope writes its own agent’s jobs and not another agent’s', async () => {
    const scope = { agentId: ids.scout, personId: ids.ada, audience: 'private' as const };
    await db.withScope(scope, (tx) => enqueue(tx, extract('test:own', {}, ids.scout)));
    await expect(db.withScope(scope, (tx) => enqueue(tx, extract('test:other', {}, ids.coder)))).rejects.toThrow(/row-level security/);
    const keys = (await outboxRows()).map((row) => row.dedupe_key);
    expect(keys).toContain('test:own');
    expect(keys).not.toContain('test:other');
  });

  it('erase jobs gather into one pending row with the union of their tables, keeping out names that are not tables', async () => {
    const scope = { agentId: ids.scout, personId: ids.ada, audience: 'private' as const };
    await db.withScope(scope, (tx) => enqueue(tx, { queue: 'erase', payload: { tables: ['facts', 'messages'] } }));
    await db.adminScope('test: a purge’s erase', (tx) => enqueue(tx, { queue: 'erase', payload: { tables: ['lessons', 'no_such_table'] } }));
    await expect(db.adminScope('test: a bad table name', (tx) => enqueue(tx, { queue: 'erase', payload: { tables: ['Facts; drop table facts'] } }))).rejects.toMatchObject({
      code: 'job_payload_invalid',
    });
    const erases = (await outboxRows()).filter((row) => row.queue === 'erase');
    expect(erases).toEqual([{ queue: 'erase', name: 'erase-forgotten', payload: { tables: ['facts', 'lessons', 'messages'] }, dedupe_key: 'erase:pending', agent_id: null }]);
  });
});
