/**
 * The outbox relay with one worker and with two at once, beside BullMQ's own
 * `addBulk`, in the same run on the same Redis. Each round writes the same
 * `--jobs` outbox rows anew (extract, embed and harvest jobs in turn), then
 * relays them until none is pending: with one `relayOutbox` loop, or with two
 * running at once on the same database (as two workers do, each claiming its
 * batches `for update skip locked`); then the same jobs are added with
 * `addBulk` in chunks of 200. Each method runs on a queue prefix of its own,
 * checked to hold every job, then obliterated. Every row must be relayed by
 * exactly one worker: the relayed counts of the workers add up to `--jobs`.
 *
 * On a server Postgres when TEST_DATABASE_URL names one (a database of its
 * own, dropped after), where two workers hold two connections; and on the
 * embedded database (PGlite in memory), one session, where two workers'
 * transactions take turns.
 *
 * Options: `--jobs=5000`, `--rounds=3`, `--redis=redis://127.0.0.1:6379`.
 */
import { randomUUID } from 'node:crypto';
import { migrate, openEmbeddedDatabase, openServerDatabase, type Database } from '@roster/db';
import { createTestServerDatabase } from '@roster/db/testing';
import { connectionFromUrl, createQueues, jobNames, relayOutbox, type QueueSet } from '@roster/jobs';
import { createScopes } from './bulk-load.js';
import { progress, type BenchmarkReport, type ResultTable } from './report.js';

export const title = 'Relay: outbox relay throughput with one and two workers, beside addBulk';

const chunk = 200;

interface Options {
  jobs: number;
  rounds: number;
  redis: string;
}

function parseOptions(args: readonly string[]): Options {
  const options: Options = { jobs: 5000, rounds: 3, redis: 'redis://127.0.0.1:6379' };
  for (const arg of args) {
    const [key, value] = arg.replace(/^--/, '').split('=');
    if (key === 'jobs' || key === 'rounds') {
      const number = Number(value);
      if (!Number.isInteger(number) || number < 1) throw new Error(`--${key} takes a whole number from 1, got ${JSON.stringify(value)}`);
      options[key] = number;
    } else if (key === 'redis' && value !== undefined) options.redis = value;
    else throw new Error(`relay: unknown option ${arg} (--jobs=N, --rounds=N, --redis=URL)`);
  }
  return options;
}

type Row = { id: string; queue: 'extract' | 'embed' | 'harvest'; name: string; payload: Record<string, unknown> };

function outboxRow(index: number, agentId: string): Row {
  const id = randomUUID();
  switch (index % 3) {
    case 0:
      return { id, queue: 'extract', name: 'extract-conversation', payload: { conversationId: randomUUID(), agentId, personId: randomUUID() } };
    case 1:
      return { id, queue: 'embed', name: 'embed-fact', payload: { factId: randomUUID(), model: 'hashing-256' } };
    default:
      return { id, queue: 'harvest', name: 'harvest-agent', payload: { agentId } };
  }
}

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

async function countJobs(queues: QueueSet): Promise<number> {
  let total = 0;
  for (const name of jobNames) {
    const counts = await queues.queues[name].getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed', 'paused');
    total += Object.values(counts).reduce((sum, count) => sum + count, 0);
  }
  return total;
}

interface Method {
  method: string;
  note: string;
  run(queues: QueueSet): Promise<number>;
  seconds: number[];
}

/** The rounds of every method on one database, interleaved. */
async function measure(database: Database, kind: string, options: Options): Promise<Method[]> {
  await migrate(database);
  const [scope] = await createScopes(database, 1, `relay-${randomUUID().slice(0, 8)}`);
  const rows = Array.from({ length: options.jobs }, (_, index) => outboxRow(index, scope!.agentId));
  const fill = () =>
    database.ownerScope('bench: fill the outbox', async (tx) => {
      await tx.query('delete from outbox');
      await tx.query(
        `insert into outbox (id, queue, name, payload, dedupe_key, agent_id, created_at)
         select id, queue, name, payload, 'bench:' || id, $5, now() + make_interval(secs => n / 1e6)
         from unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[]) with ordinality as t(id, queue, name, payload, n)`,
        [rows.map((row) => row.id), rows.map((row) => row.queue), rows.map((row) => row.name), rows.map((row) => JSON.stringify(row.payload)), scope!.agentId],
      );
    });
  /** `workers` relay loops at once, each until it finds nothing pending; every row relayed by exactly one. */
  const relay = (workers: number) => async (queues: QueueSet) => {
    await fill();
    const started = performance.now();
    const counts = await Promise.all(
      Array.from({ length: workers }, async () => {
        let relayed = 0;
        for (;;) {
          const report = await relayOutbox(database, queues);
          if (report.failed > 0) throw new Error(`the relay failed ${report.failed} rows`);
          relayed += report.relayed;
          if (report.relayed === 0) return relayed;
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const total = counts.reduce((sum, count) => sum + count, 0);
    if (total !== options.jobs) throw new Error(`${kind}: ${workers} workers relayed ${total} rows of ${options.jobs}: a row was relayed twice or not at all`);
    const pending = await database.adminScope('bench: rows still pending', (tx) => tx.query<{ n: number }>('select count(*)::int as n from outbox where relayed_at is null'));
    if (pending.rows[0]!.n !== 0) throw new Error(`${kind}: ${pending.rows[0]!.n} rows still pending`);
    return seconds;
  };
  const addBulk = async (queues: QueueSet) => {
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
  const methods: Method[] = [
    { method: 'relayOutbox, 1 worker', note: `batches of ${chunk}, claimed for update skip locked: read, add each, mark`, run: relay(1), seconds: [] },
    { method: 'relayOutbox, 2 workers at once', note: 'the same, two loops on one database and one Redis', run: relay(2), seconds: [] },
    { method: `queue.addBulk, chunks of ${chunk}`, note: 'BullMQ alone: one call per queue per chunk, no outbox', run: addBulk, seconds: [] },
  ];
  // Warm up: Redis loads BullMQ's scripts on first use; the JIT compiles the add path.
  await withQueues(options.redis, async (queues) => {
    for (const row of rows.slice(0, 300)) await queues.queues[row.queue].add(row.name, row.payload, { jobId: row.id });
  });
  for (let round = 1; round <= options.rounds; round += 1) {
    for (const method of methods) {
      progress(`relay (${kind}): round ${round} of ${options.rounds}, ${method.method}, ${options.jobs} jobs`);
      await withQueues(options.redis, async (queues) => {
        method.seconds.push(await method.run(queues));
        const counted = await countJobs(queues);
        if (counted !== options.jobs) throw new Error(`${method.method}: ${counted} jobs in Redis, of ${options.jobs}`);
      });
    }
  }
  return methods;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const rate = (value: number) => Math.round(value).toLocaleString('en-US');

function table(kind: string, methods: Method[], options: Options): ResultTable {
  return {
    title: `${kind}: ${options.jobs.toLocaleString('en-US')} jobs to BullMQ on one Redis, ${options.rounds} rounds each, interleaved`,
    columns: ['method', 'jobs', 'median s', 'jobs/s (median)', 'jobs/s (slowest – fastest round)', 'how'],
    rows: methods.map((method) => {
      const rates = method.seconds.map((seconds) => options.jobs / seconds);
      return [method.method, options.jobs.toLocaleString('en-US'), median(method.seconds).toFixed(2), rate(options.jobs / median(method.seconds)), `${rate(Math.min(...rates))} – ${rate(Math.max(...rates))}`, method.note];
    }),
  };
}

export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  const options = parseOptions(args);
  const tables: ResultTable[] = [];
  const findings: string[] = [];
  const speak = (kind: string, methods: Method[]) => {
    const [one, two, bulk] = methods.map((method) => options.jobs / median(method.seconds)) as [number, number, number];
    findings.push(
      `**${kind}:** ${rate(one)} jobs/s with one worker, ${rate(two)} with two at once (${(two / one).toFixed(2)}×), against ${rate(bulk)} for \`addBulk\` alone; ` +
        `with two workers every row was relayed by exactly one of them (their counts add up to the ${options.jobs.toLocaleString('en-US')} rows, none left pending).`,
    );
  };
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (serverUrl === undefined || serverUrl === '') progress('relay: TEST_DATABASE_URL is not set; the server Postgres table is skipped');
  else {
    const created = await createTestServerDatabase(serverUrl);
    let database: Database | undefined;
    try {
      database = await openServerDatabase(created.url);
      const methods = await measure(database, 'server', options);
      tables.push(table('Server Postgres (TEST_DATABASE_URL)', methods, options));
      speak('Server Postgres', methods);
    } catch (error) {
      // A server without pgvector cannot hold Roster's schema: said, and the embedded table still measured.
      if ((error as { code?: string }).code !== 'pgvector_missing') throw error;
      progress(`relay: the server Postgres is skipped: ${(error as Error).message}`);
      findings.push(`The server Postgres (TEST_DATABASE_URL) was not measured in this run: it has no pgvector, so Roster's schema cannot be made there.`);
    } finally {
      await database?.close();
      await created.drop();
    }
  }
  const embedded = await openEmbeddedDatabase('memory://');
  try {
    const methods = await measure(embedded, 'embedded', options);
    tables.push(table('Embedded (PGlite in memory)', methods, options));
    speak('Embedded', methods);
  } finally {
    await embedded.close();
  }
  return {
    notes: [
      `Each round writes the same ${options.jobs.toLocaleString('en-US')} outbox rows anew (extract, embed and harvest jobs in turn, valid payloads), then relays them with \`relayOutbox\` ` +
        `until none is pending: one loop, or two loops at once on the same database, as two workers run it (each batch of ${chunk} claimed \`for update skip locked\`, ` +
        `added to Redis one \`add\` per row and marked in the same transaction). Then the same jobs (same ids and payloads) are added by \`addBulk\` in chunks of ${chunk}. ` +
        `Each method on a queue prefix of its own on the machine's Redis, checked to hold every job, then obliterated; after a warm-up of 300 adds. ` +
        'On the server Postgres, two workers hold two connections; the embedded database is one session, so two workers’ transactions take turns there.',
    ],
    tables,
    findings,
  };
}
