// The outbox relay's throughput: jobs written to the outbox, handed to BullMQ queues in batches.
import { randomUUID } from 'node:crypto';
import { migrate, openEmbeddedDatabase } from '@roster/db';
import { connectionFromUrl, createQueues, jobNames, relayOutbox, type QueueSet } from '@roster/jobs';
import { relayBatch, type RelayResult } from './jobs-report.js';
import { timedDatabase } from './jobs-timing.js';
import { createScopes } from './bulk-load.js';
import { progress } from './report.js';

/** Payloads of the three jobs turns write, round robin. */
function outboxJob(index: number, agentId: string): { queue: 'extract' | 'embed' | 'harvest'; name: string; payload: Record<string, unknown> } {
  switch (index % 3) {
    case 0:
      return { queue: 'extract', name: 'extract-conversation', payload: { conversationId: randomUUID(), agentId, personId: randomUUID() } };
    case 1:
      return { queue: 'embed', name: 'embed-fact', payload: { factId: randomUUID(), model: 'hashing-256' } };
    default:
      return { queue: 'harvest', name: 'harvest-agent', payload: { agentId } };
  }
}

async function countJobs(queues: QueueSet): Promise<number> {
  let total = 0;
  for (const name of jobNames) {
    const counts = await queues.queues[name].getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed', 'paused');
    total += Object.values(counts).reduce((sum, count) => sum + count, 0);
  }
  return total;
}

/** Queues under a prefix of their own, emptied and closed after `fn`. */
async function withQueues<T>(redis: string, fn: (queues: QueueSet) => Promise<T>): Promise<T> {
  const queues = createQueues(connectionFromUrl(redis), `bench-${randomUUID()}`);
  try {
    await Promise.all(jobNames.map((name) => queues.queues[name].waitUntilReady()));
    return await fn(queues);
  } finally {
    for (const name of jobNames) await queues.queues[name].obliterate({ force: true });
    await queues.close();
  }
}

type OutboxJob = ReturnType<typeof outboxJob> & { id: string };

/** Rounds of every method, interleaved, so that a slow moment of a shared machine does not land on one method only. */
const relayRounds = 3;

export async function measureRelay(jobs: number, redis: string): Promise<RelayResult> {
  const database = await openEmbeddedDatabase('memory://');
  try {
    await migrate(database);
    const [scope] = await createScopes(database, 1, 'relay');
    const agentId = scope!.agentId;
    const rows: OutboxJob[] = Array.from({ length: jobs }, (_, index) => ({ id: randomUUID(), ...outboxJob(index, agentId) }));
    const { database: timed, times } = timedDatabase(database, (sql) => (sql.includes('select id, queue') ? 'read pending rows' : sql.includes('update outbox') ? 'mark rows relayed' : 'other'));

    const relay = async (queues: QueueSet) => {
      // The same rows each round: written anew (as turns would write them), then relayed until none is pending.
      await database.adminScope('bench: fill the outbox', async (tx) => {
        await tx.query('delete from outbox');
        await tx.query(
          `insert into outbox (id, queue, name, payload, dedupe_key, agent_id, created_at)
           select id, queue, name, payload, 'bench:' || id, $5, now() + make_interval(secs => n / 1e6)
           from unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[]) with ordinality as t(id, queue, name, payload, n)`,
          [rows.map((row) => row.id), rows.map((row) => row.queue), rows.map((row) => row.name), rows.map((row) => JSON.stringify(row.payload)), agentId],
        );
      });
      const started = performance.now();
      let relayed = 0;
      for (;;) {
        const report = await relayOutbox(timed, queues);
        if (report.failed > 0) throw new Error(`the relay failed ${report.failed} rows`);
        relayed += report.relayed;
        if (report.relayed === 0) break;
      }
      const seconds = (performance.now() - started) / 1000;
      if (relayed !== jobs) throw new Error(`relayed ${relayed} of ${jobs}`);
      return seconds;
    };
    const addLoop = async (queues: QueueSet) => {
      const started = performance.now();
      for (const row of rows) await queues.queues[row.queue].add(row.name, row.payload, { jobId: row.id });
      return (performance.now() - started) / 1000;
    };
    const addBulk = (chunk: number) => async (queues: QueueSet) => {
      const started = performance.now();
      for (let start = 0; start < rows.length; start += chunk) {
        const slice = rows.slice(start, start + chunk);
        await Promise.all(
          (['extract', 'embed', 'harvest'] as const).map((queue) => {
            const mine = slice.filter((row) => row.queue === queue);
            return mine.length === 0 ? undefined : queues.queues[queue].addBulk(mine.map((row) => ({ name: row.name, data: row.payload, opts: { jobId: row.id } })));
          }),
        );
      }
      return (performance.now() - started) / 1000;
    };
    const methods: Array<{ method: string; note: string; run: (queues: QueueSet) => Promise<number>; seconds: number[] }> = [
      { method: 'relayOutbox (outbox rows → jobs)', note: `batches of ${relayBatch}: read, add each, mark`, run: relay, seconds: [] },
      { method: 'queue.add in a loop', note: 'one await per job, same ids and payloads', run: addLoop, seconds: [] },
      { method: `queue.addBulk, chunks of ${relayBatch}`, note: 'one call per queue per chunk', run: addBulk(relayBatch), seconds: [] },
      { method: `queue.addBulk, chunks of ${jobs}`, note: 'one call per queue', run: addBulk(jobs), seconds: [] },
    ];
    // Warm up: Redis loads BullMQ's scripts on first use, and the JIT compiles the add path; neither belongs to the first method measured.
    await withQueues(redis, async (queues) => {
      for (const row of rows.slice(0, 300)) await queues.queues[row.queue].add(row.name, row.payload, { jobId: row.id });
    });
    for (let round = 1; round <= relayRounds; round += 1) {
      for (const method of methods) {
        progress(`relay: round ${round} of ${relayRounds}, ${method.method}, ${jobs} jobs`);
        await withQueues(redis, async (queues) => {
          method.seconds.push(await method.run(queues));
          const counted = await countJobs(queues);
          if (counted !== jobs) throw new Error(`${method.method}: ${counted} jobs in Redis, of ${jobs}`);
        });
      }
    }
    return { jobs, rounds: relayRounds, methods: methods.map(({ method, note, seconds }) => ({ method, note, seconds })), relayTimes: times };
  } finally {
    await database.close();
  }
}

