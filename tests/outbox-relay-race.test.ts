/**
 * Two outbox relays at once (a worker per machine), each on its own
 * connection to one database: every pending row is handed to BullMQ by
 * exactly one of them, none is left behind. On the embedded database (two
 * clients of its host, as two processes are) and, with TEST_DATABASE_URL, on
 * a server Postgres, where the two transactions really run side by side.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { migrate, openEmbeddedDatabase, openServerDatabase, type Database } from '@roster/db';
import { createTestServerDatabase } from '@roster/db/testing';
import { connectionFromUrl, createQueues, relayOutbox, type QueueSet } from '@roster/jobs';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDataDir } from './support/roster-process.js';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const serverUrl = process.env.TEST_DATABASE_URL;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!().catch(() => {});
});

/** Two connections (pools) to one new database of the given kind. */
async function twoConnections(kind: 'embedded' | 'server'): Promise<[Database, Database]> {
  if (kind === 'server') {
    const created = await createTestServerDatabase(serverUrl!);
    cleanups.push(() => created.drop());
    const first = await openServerDatabase(created.url);
    cleanups.push(() => first.close());
    await migrate(first);
    const second = await openServerDatabase(created.url);
    cleanups.push(() => second.close());
    return [first, second];
  }
  const folder = path.join(tempDataDir({ fresh: true }), 'pglite');
  const first = await openEmbeddedDatabase(folder);
  cleanups.push(() => first.close());
  await migrate(first);
  const second = await openEmbeddedDatabase(folder);
  cleanups.push(() => second.close());
  return [first, second];
}

const rowCount = 600;
const batchSize = 10;

const kinds: Array<'embedded' | 'server'> = serverUrl === undefined || serverUrl === '' ? ['embedded'] : ['embedded', 'server'];

describe.each(kinds)('two outbox relays racing on one %s database', (kind) => {
  it('relay every pending row exactly once between them, and leave none pending', async () => {
    const [first, second] = await twoConnections(kind);
    const prefix = `test-${randomUUID()}`;
    const queues: QueueSet[] = [createQueues(connectionFromUrl(redisUrl), prefix), createQueues(connectionFromUrl(redisUrl), prefix)];
    for (const set of queues) cleanups.push(() => set.close());

    const ids = await first.adminScope('test: fill the outbox', async (tx) => {
      const { rows } = await tx.query<{ id: string }>(
        `insert into outbox (queue, name, payload, dedupe_key) select 'vacuum', 'vacuum', '{}', 'race:' || n from generate_series(1, $1::int) as n returning id`,
        [rowCount],
      );
      return rows.map((row) => row.id).sort();
    });
    expect(ids).toHaveLength(rowCount);

    const [one, two] = await Promise.all([relayOutbox(first, queues[0]!, { batchSize }), relayOutbox(second, queues[1]!, { batchSize })]);

    // Both took part (the race happened), neither failed, and between them they relayed each row once.
    expect(one.failed).toBe(0);
    expect(two.failed).toBe(0);
    expect(one.relayed).toBeGreaterThan(0);
    expect(two.relayed).toBeGreaterThan(0);
    expect(one.relayed + two.relayed).toBe(rowCount);

    // Each row was handed over once (one attempt) and is marked; nothing is pending.
    const rows = await second.adminScope('test: read the outbox', async (tx) => {
      const { rows } = await tx.query<{ id: string; attempts: number; relayed: boolean }>('select id, attempts, relayed_at is not null as relayed from outbox order by id');
      return rows;
    });
    expect(rows.map((row) => row.id)).toEqual(ids);
    expect(rows.filter((row) => !row.relayed || row.attempts !== 1)).toEqual([]);

    // BullMQ holds one job per row, with the row's id.
    const jobs = await queues[0]!.queues.vacuum.getJobs(['waiting', 'active', 'delayed', 'prioritized', 'paused', 'completed', 'failed']);
    expect(jobs.map((job) => job.id).sort()).toEqual(ids);

    // Nothing left for a third run.
    expect(await relayOutbox(first, queues[0]!, { batchSize })).toEqual({ relayed: 0, failed: 0 });
  }, 120_000);
});
