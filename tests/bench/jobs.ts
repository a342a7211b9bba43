/**
 * The job pipeline's throughput: how fast `fade` turns unused facts into
 * faded ones (with one audit event each), and how fast the outbox relay hands
 * rows to BullMQ, beside BullMQ's own add rates on the same Redis.
 *
 * Fade: at each size, N facts across `--agents` agents (one person each),
 * all recorded 60 days ago and never used, so every one is eligible; then
 * `fade(database, audit)` as the nightly job runs it (batches of 500), timed,
 * with each statement it sends timed by kind; then the parts of one audit
 * event timed inside Postgres (the chain's lock, its last event, and
 * `roster_insert_events`, which stores events whose keyed hashes JavaScript
 * computed), and from JavaScript one `audit.append` against a batch of
 * events per `audit.appendMany`.
 *
 * Relay: `--jobs` outbox rows relayed by `relayOutbox` (batches of 200),
 * against the same number of `queue.add` calls in a loop and `addBulk` in
 * chunks, each on a queue prefix of its own, removed afterwards.
 *
 * Options: `--sizes=10000,100000,1000000` (fade sizes; `--sizes=` skips fade),
 * `--budget=600` (seconds one fade may run; a fade stopped there reports the
 * rate of what it did), `--agents=1000`, `--jobs=5000` (`--jobs=0` skips the
 * relay), `--target=1000000` (the size the findings speak of),
 * `--redis=redis://127.0.0.1:6379`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { InstallationKey } from '@roster/config';
import { migrate, openEmbeddedDatabase, type Database, type Transaction } from '@roster/db';
import { connectionFromUrl, createQueues, jobNames, relayOutbox, type QueueSet } from '@roster/jobs';
import { contentHash, createAuditLog, fade, fadeBatchStatement, protectedCategories, type MemoryEvent } from '@roster/memory';
import { createScopes } from './bulk-load.js';
import { formatDuration, progress, type BenchmarkReport, type ResultTable } from './report.js';
import { createFact, createRandom, createVocabulary } from './synthetic.js';

export const title = 'Jobs: fade throughput and outbox relay throughput';

const seed = 20_240_612;
/** Rows per INSERT while loading facts. */
const loadBatch = 10_000;
/** fade's and the relay's own defaults, named here to show them in the tables. */
const fadeBatch = 500;
const relayBatch = 200;
/** How many times each part of an audit event is repeated inside Postgres. */
const profileRepeats = 2_000;
/** The installation key of the benchmark's databases: a new random one per run. */
const benchKey = new InstallationKey(randomBytes(32), 'bench');

interface Options {
  sizes: number[];
  /** Seconds one fade may run before it is stopped and its rate taken from what it did. */
  budget: number;
  agents: number;
  jobs: number;
  target: number;
  redis: string;
}

function parseOptions(args: readonly string[]): Options {
  const options: Options = { sizes: [10_000, 100_000, 1_000_000], budget: 600, agents: 1_000, jobs: 5_000, target: 1_000_000, redis: 'redis://127.0.0.1:6379' };
  const count = (value: string) => Number.parseInt(value.replace(/k$/i, '000').replace(/m$/i, '000000'), 10);
  for (const arg of args) {
    const [key, value = ''] = arg.replace(/^--/, '').split('=');
    if (key === 'sizes') options.sizes = value === '' ? [] : value.split(',').map(count);
    else if (key === 'agents') options.agents = count(value);
    else if (key === 'budget') options.budget = Number.parseInt(value, 10);
    else if (key === 'jobs') options.jobs = count(value);
    else if (key === 'target') options.target = count(value);
    else if (key === 'redis') options.redis = value;
    else throw new Error(`Unknown option ${arg}: jobs takes --sizes=10000,100000,1000000 --budget=600 --agents=1000 --jobs=5000 --target=1000000 --redis=redis://…`);
  }
  if (options.sizes.some((size) => !Number.isInteger(size) || size < options.agents) || !(options.agents >= 1) || !(options.jobs >= 0) || !(options.budget > 0)) {
    throw new Error('--sizes must be integers of at least --agents; --agents and --budget (seconds) positive; --jobs zero or more.');
  }
  return options;
}

/** Time spent per kind of statement, and in the transactions around them. */
interface StatementTimes {
  byKind: Map<string, { ms: number; calls: number; each: number[] }>;
  /** Wall time of every adminScope call (statements + begin/commit + pool). */
  transactionsMs: number;
  transactions: number;
  /** Each adminScope call's wall time, in order (for fade: one per batch). */
  eachTransaction: number[];
}

/**
 * The same database, with every statement sent through an admin scope timed
 * by `classify(sql)`. Measuring, not replacing: each call goes to the real
 * database unchanged.
 */
function timedDatabase(database: Database, classify: (sql: string) => string): { database: Database; times: StatementTimes } {
  const times: StatementTimes = { byKind: new Map(), transactionsMs: 0, transactions: 0, eachTransaction: [] };
  const timed: Database = {
    ...database,
    kind: database.kind,
    location: database.location,
    async adminScope(reason, fn) {
      const started = performance.now();
      try {
        return await database.adminScope(reason, (tx) =>
          fn({
            async query(text, params) {
              const begun = performance.now();
              try {
                return await tx.query(text, params);
              } finally {
                const kind = classify(text);
                const entry = times.byKind.get(kind) ?? { ms: 0, calls: 0, each: [] };
                const ms = performance.now() - begun;
                entry.ms += ms;
                entry.calls += 1;
                entry.each.push(ms);
                times.byKind.set(kind, entry);
              }
            },
          } satisfies Transaction),
        );
      } finally {
        const ms = performance.now() - started;
        times.transactionsMs += ms;
        times.transactions += 1;
        times.eachTransaction.push(ms);
      }
    },
  };
  return { database: timed, times };
}

interface FadeResult {
  size: number;
  /** True when the fade ran out of its time budget and was stopped after a batch: its rate is that of the facts it did. */
  stopped: boolean;
  agents: number;
  loadSeconds: number;
  fadeSeconds: number;
  faded: number;
  batches: number;
  times: StatementTimes;
  /** The plan of fade's first batch statement, as EXPLAIN ANALYZE runs it (then rolled back), and its time. */
  plan: { nodes: string; ms: number };
  /** The same with an index that orders eligible facts by recorded_at, made in the same rolled-back transaction (bench only). */
  planWithIndex: { nodes: string; ms: number };
  /** Mean µs per repetition of each part of an audit event, inside Postgres. */
  parts: Array<{ part: string; micros: number }>;
  /**
   * Mean µs from JavaScript: a `select 1`; one event per `audit.append` (its
   * keyed hash, then two statements: the heads and the insert); and per
   * event, a batch of them per `audit.appendMany` (as fade sends them).
   */
  roundTrip: { select: number; appendEvent: number; appendEventsPerEvent: number };
}

/** Thrown from fade's progress report to stop it at the budget (after a committed batch). */
class BudgetReached extends Error {
  constructor(readonly faded: number) {
    super('the time budget is spent');
  }
}

async function measureFade(size: number, agents: number, budget: number): Promise<FadeResult> {
  const database = await openEmbeddedDatabase('memory://');
  try {
    await migrate(database);
    const scopes = await createScopes(database, agents, 'fade');
    const vocabulary = createVocabulary(seed);
    const random = createRandom(seed + size);
    progress(`fade ${size}: loading ${size} facts over ${agents} agents, recorded 60 days ago`);
    let started = performance.now();
    for (let start = 0; start < size; start += loadBatch) {
      const count = Math.min(loadBatch, size - start);
      const contents = Array.from({ length: count }, (_, index) => `${createFact(random, vocabulary)} (#${start + index})`);
      const owners = Array.from({ length: count }, (_, index) => scopes[(start + index) % agents]!);
      await database.adminScope('bench: bulk load facts to fade', (tx) =>
        tx.query(
          `insert into facts (agent_id, person_id, audience, content, content_hash, category, trust, recorded_at, valid_from)
           select agent_id, person_id, 'private', content, content_hash, 'general', 'active', now() - interval '60 days', now() - interval '60 days'
           from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[]) as t(agent_id, person_id, content, content_hash)`,
          [owners.map((scope) => scope.agentId), owners.map((scope) => scope.personId), contents, contents.map(contentHash)],
        ),
      );
      if ((start + count) % 100_000 === 0) progress(`fade ${size}: ${start + count} loaded, ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
    await database.ownerScope('bench: analyze after bulk load', (tx) => tx.query('analyze facts'));
    const loadSeconds = (performance.now() - started) / 1000;

    const plan = await explainBatch(database, false);
    const planWithIndex = await explainBatch(database, true);
    progress(`fade ${size}: loaded in ${loadSeconds.toFixed(1)} s; one batch plans as ${plan.nodes} (${plan.ms.toFixed(0)} ms); running fade(database, audit)`);
    const { database: timed, times } = timedDatabase(database, (sql) =>
      sql.includes('roster_insert_events') ? eventsKind : sql.includes('roster_event_heads') ? headsKind : sql.includes('update facts') ? updateKind : 'other',
    );
    started = performance.now();
    let reported = 0;
    let report: { faded: number; batches: number };
    let stopped = false;
    try {
      report = await fade(timed, createAuditLog({ database: timed, key: benchKey }), {
        onProgress: (faded) => {
          const seconds = (performance.now() - started) / 1000;
          if (faded - reported >= 20_000) {
            reported = faded;
            progress(`fade ${size}: ${faded} faded, ${seconds.toFixed(0)} s, ${(faded / seconds).toFixed(0)} rows/s`);
          }
          if (seconds > budget && faded < size) throw new BudgetReached(faded);
        },
      });
    } catch (error) {
      if (!(error instanceof BudgetReached)) throw error;
      stopped = true;
      report = { faded: error.faded, batches: Math.ceil(error.faded / fadeBatch) };
    }
    const fadeSeconds = (performance.now() - started) / 1000;
    progress(`fade ${size}: ${report.faded} faded in ${formatDuration(fadeSeconds)}${stopped ? ' (stopped at the budget)' : ''}; profiling one audit event`);
    const check = await database.adminScope('bench: check the fade', async (tx) => {
      const facts = await tx.query<{ count: string }>(`select count(*) from facts where trust = 'faded'`);
      const events = await tx.query<{ count: string }>(`select count(*) from memory_events where action = 'fade'`);
      return { facts: Number(facts.rows[0]!.count), events: Number(events.rows[0]!.count) };
    });
    if (check.facts !== report.faded || check.events !== report.faded || (!stopped && report.faded !== size)) {
      throw new Error(`fade reported ${report.faded} and left ${check.facts} faded facts and ${check.events} events, of ${size}`);
    }

    const parts = await profileAuditEvent(database, scopes[0]!.agentId, scopes[0]!.personId!);
    const roundTrip = await measureRoundTrips(database, scopes[0]!.agentId, scopes[0]!.personId!);
    return { size, stopped, agents, loadSeconds, fadeSeconds, faded: report.faded, batches: report.batches, times, plan, planWithIndex, parts, roundTrip };
  } finally {
    await database.close();
  }
}

/**
 * fade's batch statement (the same text, with fade's default values), run
 * once under EXPLAIN ANALYZE and rolled back: which plan picks the batch,
 * and what it costs on a table where every fact is eligible.
 */
async function explainBatch(database: Database, orderedIndex: boolean): Promise<{ nodes: string; ms: number }> {
  return database
    .ownerScope('bench: plan of one fade batch (an index made for it is the owner’s to make)', async (tx) => {
      if (orderedIndex) {
        await tx.query(`create index bench_fade_order_idx on facts (recorded_at) where trust in ('active', 'candidate')`);
        await tx.query('analyze facts');
      }
      const { rows } = await tx.query<{ 'QUERY PLAN': string }>(
        `explain (analyze, costs off) ${fadeBatchStatement}`,
        [new Date(Date.now() - 45 * 86_400_000), 2, [...protectedCategories], fadeBatch],
      );
      const lines = rows.map((row) => row['QUERY PLAN']);
      const nodes = lines
        .map((line) => /^\s*(?:->\s+)?([A-Z][A-Za-z ]+?)(?: using (\w+))?(?: on (\w+)(?: \w+)?)?\s+\(actual/.exec(line))
        .filter((match): match is RegExpExecArray => match !== null)
        .map((match) => `${match[1]}${match[2] === undefined ? '' : ` using ${match[2]}`}${match[3] === undefined ? '' : ` on ${match[3]}`}`);
      const sort = lines.map((line) => /Sort Method: ([\w -]+?)\s+(?:Memory|Disk): (\d+kB)/.exec(line)).find((match) => match !== null);
      const ms = Number(/Execution Time: ([\d.]+) ms/.exec(lines.join('\n'))?.[1] ?? Number.NaN);
      const sorted = sort === undefined ? '' : ` (sort: ${sort[1]}, ${sort[2]}${sort[0].includes('Disk') ? ' on disk' : ''})`;
      throw new RolledBack(0, { nodes: nodes.join(' ← ') + sorted, ms });
    })
    .catch((error: unknown) => {
      if (error instanceof RolledBack && error.detail !== undefined) return error.detail as { nodes: string; ms: number };
      throw error;
    });
}

/**
 * Each step Postgres takes for one audit event, repeated inside one DO block
 * on an agent whose chain already holds its share of the fade events, timed
 * with clock_timestamp(); the transaction is rolled back (events cannot be
 * deleted). The hash stored is a stand-in: Postgres checks only that it has
 * the form of one and that the event links to the one before (the keyed hash
 * is JavaScript's, timed from there).
 */
async function profileAuditEvent(database: Database, agentId: string, personId: string): Promise<Array<{ part: string; micros: number }>> {
  const event = (seq: string, prev: string) =>
    `jsonb_build_array(jsonb_build_object('id', gen_random_uuid(), 'agent_id', v_agent, 'seq', ${seq}, 'person_id', v_person, 'actor_kind', 'job', ` +
    `'actor_id', 'fade', 'action', 'fade', 'target_kind', 'fact', 'target_id', gen_random_uuid()::text, 'detail', '{"unused_days":45,"min_uses":2}'::jsonb, ` +
    `'occurred_at', clock_timestamp(), 'prev_hash', ${prev}, 'hash', v_hash))`;
  const steps: Array<[string, string]> = [
    ['loop alone (baseline)', `perform 1;`],
    ['advisory lock (pg_advisory_xact_lock)', `perform pg_advisory_xact_lock(roster_event_chain_lock(v_agent));`],
    ['last event of the chain (order by seq desc limit 1)', `select * into v_prev from memory_events where agent_id = v_agent order by seq desc limit 1;`],
    ['roster_event_heads of one agent (lock, last event, time)', `perform * from roster_event_heads(array[v_agent]);`],
    [
      'roster_insert_events of one event (scope and link checks, insert)',
      `v_hash := encode(sha256(convert_to(gen_random_uuid()::text, 'UTF8')), 'hex');
               perform roster_insert_events(${event('v_prev.seq + 1', 'v_prev.hash')});
               v_prev.seq := v_prev.seq + 1; v_prev.hash := v_hash;`,
    ],
  ];
  const results: Array<{ part: string; micros: number }> = [];
  for (const [part, statement] of steps) {
    const micros = await database
      .adminScope('bench: time one part of an audit event', async (tx) => {
        await tx.query(
          `do $$
           declare
             v_agent uuid := '${agentId}';
             v_person uuid := '${personId}';
             v_prev memory_events;
             v_hash text;
             v_started timestamptz;
           begin
             select * into v_prev from memory_events where agent_id = v_agent order by seq desc limit 1;
             v_started := clock_timestamp();
             for i in 1..${profileRepeats} loop
               ${statement}
             end loop;
             perform set_config('bench.micros', (extract(epoch from clock_timestamp() - v_started) * 1e6 / ${profileRepeats})::text, true);
           end
           $$`,
        );
        const { rows } = await tx.query<{ micros: string }>(`select current_setting('bench.micros') as micros`);
        throw new RolledBack(Number(rows[0]!.micros));
      })
      .catch((error: unknown) => {
        if (error instanceof RolledBack) return error.value;
        throw error;
      });
    results.push({ part, micros });
  }
  return results;
}

/** Carries a measurement out of a transaction that must not commit. */
class RolledBack extends Error {
  constructor(
    readonly value: number,
    readonly detail?: unknown,
  ) {
    super('rolled back on purpose');
  }
}

/** Round trips from JavaScript through node-postgres to PGlite, inside one transaction each way. */
async function measureRoundTrips(database: Database, agentId: string, personId: string): Promise<FadeResult['roundTrip']> {
  const audit = createAuditLog({ database, key: benchKey });
  const time = async (step: (tx: Transaction) => Promise<unknown>, repeats = 2_000, perStep = 1) =>
    database
      .adminScope('bench: time round trips', async (tx) => {
        const started = performance.now();
        for (let index = 0; index < repeats; index += 1) await step(tx);
        throw new RolledBack(((performance.now() - started) * 1000) / (repeats * perStep));
      })
      .catch((error: unknown) => {
        if (error instanceof RolledBack) return error.value;
        throw error;
      });
  const fadeEvent = (): MemoryEvent => ({
    agentId,
    personId,
    actor: { kind: 'job', id: 'fade' },
    action: 'fade',
    targetKind: 'fact',
    targetId: randomUUID(),
    detail: { unused_days: 45, min_uses: 2 },
  });
  return {
    select: await time((tx) => tx.query('select 1')),
    appendEvent: await time((tx) => audit.append(tx, fadeEvent())),
    appendEventsPerEvent: await time((tx) => audit.appendMany(tx, Array.from({ length: fadeBatch }, fadeEvent)), 10, fadeBatch),
  };
}

interface RelayResult {
  jobs: number;
  rounds: number;
  /** Seconds of each round, per method. */
  methods: Array<{ method: string; seconds: number[]; note: string }>;
  relayTimes: StatementTimes;
}

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

async function measureRelay(jobs: number, redis: string): Promise<RelayResult> {
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

export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  const options = parseOptions(args);
  const fades: FadeResult[] = [];
  for (const size of options.sizes) fades.push(await measureFade(size, options.agents, options.budget));
  const relay = options.jobs > 0 ? await measureRelay(options.jobs, options.redis) : undefined;
  return buildReport(fades, relay, options);
}

function formatCount(value: number): string {
  return value >= 1_000_000 && value % 1_000_000 === 0 ? `${value / 1_000_000}M` : value >= 1000 && value % 1000 === 0 ? `${value / 1000}k` : String(value);
}

function formatRate(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Mean of the first and of the last tenth of a series (at least one value each). */
function tenths(values: readonly number[]): { first: number; last: number } {
  const size = Math.max(1, Math.floor(values.length / 10));
  const mean = (part: readonly number[]) => part.reduce((sum, value) => sum + value, 0) / part.length;
  return { first: mean(values.slice(0, size)), last: mean(values.slice(-size)) };
}

const eventsKind = 'audit events: roster_insert_events, one statement per batch';
const headsKind = 'audit chain heads: roster_event_heads (locks the chains), one statement per batch';
const updateKind = 'select + update a batch of facts';

function buildReport(fades: FadeResult[], relay: RelayResult | undefined, options: Options): BenchmarkReport {
  const tables: ResultTable[] = [];
  const findings: string[] = [];
  if (fades.length > 0) {
    tables.push({
      title: `fade(database, audit): every fact eligible, batches of ${fadeBatch}, one audit event per fact`,
      columns: ['facts', 'agents', 'faded', 'batches', 'fade', 'rows/s', 'ms per fact', 'ms per batch: first tenth', 'last tenth', 'bulk load (setup)'],
      rows: fades.map((result) => {
        // The batches that faded something (a last, empty one ends the loop when N is a multiple of the batch size).
        const batches = tenths(result.times.eachTransaction.slice(0, result.batches));
        return [
          formatCount(result.size),
          formatCount(result.agents),
          result.stopped ? `${result.faded.toLocaleString('en-US')} (stopped at the ${formatDuration(options.budget)} budget)` : 'all',
          String(result.batches),
          formatDuration(result.fadeSeconds),
          formatRate(result.faded / result.fadeSeconds),
          ((result.fadeSeconds * 1000) / result.faded).toFixed(3),
          batches.first.toFixed(0),
          batches.last.toFixed(0),
          formatDuration(result.loadSeconds),
        ];
      }),
    });
    tables.push({
      title:
        'Plan of fade’s first batch (EXPLAIN ANALYZE of its statement on the loaded table, rolled back); and with an index on ' +
        "(recorded_at) where trust in ('active', 'candidate'), made for the measurement only and rolled back with it",
      columns: ['facts', 'indexes', 'plan (outermost first)', 'ms'],
      rows: fades.flatMap((result) => [
        [formatCount(result.size), 'as migrated', result.plan.nodes, result.plan.ms.toFixed(0)],
        [formatCount(result.size), '+ (recorded_at) partial index', result.planWithIndex.nodes, result.planWithIndex.ms.toFixed(0)],
      ]),
    });
    tables.push({
      title: 'Where fade’s time goes: the statements it sends, timed from JavaScript, and their share of its wall time',
      columns: ['facts', 'statement', 'calls', 'total s', 'ms per call', 'first tenth', 'last tenth', 'share'],
      rows: fades.flatMap((result) => {
        const wall = result.fadeSeconds * 1000;
        const statements = [...result.times.byKind.entries()].sort((a, b) => b[1].ms - a[1].ms);
        const inStatements = statements.reduce((sum, [, entry]) => sum + entry.ms, 0);
        return [
          ...statements.map(([kind, entry]) => {
            // Per batch: leave out the last, empty call that ends the loop.
            const drift = tenths(kind === updateKind ? entry.each.slice(0, result.batches) : entry.each);
            return [
              formatCount(result.size),
              kind,
              entry.calls.toLocaleString('en-US'),
              (entry.ms / 1000).toFixed(1),
              (entry.ms / entry.calls).toFixed(3),
              drift.first.toFixed(3),
              drift.last.toFixed(3),
              `${((100 * entry.ms) / wall).toFixed(1)}%`,
            ];
          }),
          [
            formatCount(result.size),
            'begin, commit, pool, JavaScript between statements',
            result.times.transactions.toLocaleString('en-US'),
            ((wall - inStatements) / 1000).toFixed(1),
            '–',
            '–',
            '–',
            `${((100 * (wall - inStatements)) / wall).toFixed(1)}%`,
          ],
        ];
      }),
    });
    tables.push({
      title: `Inside one audit event: each part repeated ${profileRepeats.toLocaleString('en-US')} times in a DO block, µs each; and round trips from JavaScript, µs`,
      columns: [
        'facts (events in the agent’s chain)',
        ...fades[0]!.parts.map((part) => part.part),
        'from JS: select 1',
        'from JS: one audit.append (keyed hash, heads, insert)',
        `from JS: audit.appendMany of ${fadeBatch}, per event`,
      ],
      rows: fades.map((result) => [
        `${formatCount(result.size)} (${formatCount(Math.round(result.size / result.agents))})`,
        ...result.parts.map((part) => part.micros.toFixed(1)),
        result.roundTrip.select.toFixed(1),
        result.roundTrip.appendEvent.toFixed(1),
        result.roundTrip.appendEventsPerEvent.toFixed(1),
      ]),
    });

    const largest = fades[fades.length - 1]!;
    const perFact = (result: FadeResult) => result.fadeSeconds / result.faded;
    const rates = fades.map((result) => `${formatRate(result.faded / result.fadeSeconds)} rows/s at ${formatCount(result.size)}`).join(', ');
    const measuredTarget = fades.find((result) => result.size === options.target);
    let atTarget: string;
    if (measuredTarget !== undefined && !measuredTarget.stopped) {
      atTarget = `${formatCount(options.target)} facts across ${formatCount(measuredTarget.agents)} agents faded in ${formatDuration(measuredTarget.fadeSeconds)}, measured.`;
    } else if (measuredTarget !== undefined) {
      const batches = tenths(measuredTarget.times.eachTransaction.slice(0, measuredTarget.batches));
      atTarget =
        `At ${formatCount(options.target)} facts across ${formatCount(measuredTarget.agents)} agents, fade was stopped at its ${formatDuration(options.budget)} budget ` +
        `after ${measuredTarget.faded.toLocaleString('en-US')} facts (${formatRate(measuredTarget.faded / measuredTarget.fadeSeconds)} rows/s); at that rate the whole run ` +
        `would take about ${formatDuration(options.target / (measuredTarget.faded / measuredTarget.fadeSeconds))}` +
        ` (a batch took ${batches.first.toFixed(0)} ms on average in the first tenth of the measured part and ${batches.last.toFixed(0)} ms in the last` +
        `${batches.last < batches.first * 0.9 ? ': batches get faster as fewer facts remain eligible, so the rest would go faster than this estimate' : ''}).` +
        ` Cost per fact by size: ${fades.map((result) => `${(((result.fadeSeconds * 1000) / result.faded)).toFixed(3)} ms at ${formatCount(result.size)}`).join(', ')}.`;
    } else {
      const linear = options.target * perFact(largest);
      const previous = fades.length > 1 ? fades[fades.length - 2]! : undefined;
      let grown = '';
      if (previous !== undefined && previous.size < largest.size) {
        // The cost per fact grew by `growth` over the last measured step of size; assume it keeps growing at that pace.
        const growth = perFact(largest) / perFact(previous);
        const steps = Math.log(options.target / largest.size) / Math.log(largest.size / previous.size);
        const projected = linear * growth ** steps;
        grown =
          ` The cost per fact went from ${(perFact(previous) * 1000).toFixed(3)} ms at ${formatCount(previous.size)} to ${(perFact(largest) * 1000).toFixed(3)} ms ` +
          `at ${formatCount(largest.size)} (×${growth.toFixed(2)})` +
          (growth > 1.05 ? `; if it keeps growing at that pace, about ${formatDuration(projected)}.` : ': it did not grow with the table.');
      }
      atTarget =
        `${formatCount(options.target)} facts across ${formatCount(options.agents)} agents were not run; at ${formatCount(largest.size)}'s rate they would take ` +
        `about ${formatDuration(linear)}.${grown}`;
    }
    findings.push(`**Fade throughput:** ${rates}. ${atTarget}`);

    const wall = largest.fadeSeconds * 1000;
    const shares = [...largest.times.byKind.entries()]
      .sort((a, b) => b[1].ms - a[1].ms)
      .map(([kind, entry]) => `${kind} ${((100 * entry.ms) / wall).toFixed(0)}% (${(entry.ms / entry.calls).toFixed(1)} ms per call, ${(entry.ms / largest.faded).toFixed(3)} ms per fact)`);
    const part = (prefix: string) => largest.parts.find((candidate) => candidate.part.startsWith(prefix))!.micros;
    const base = part('loop');
    const first = fades[0]!;
    const update = (result: FadeResult) => result.times.byKind.get(updateKind);
    const events = (result: FadeResult) => {
      const inserts = result.times.byKind.get(eventsKind);
      const heads = result.times.byKind.get(headsKind);
      return inserts === undefined && heads === undefined ? undefined : { ms: (inserts?.ms ?? 0) + (heads?.ms ?? 0) };
    };
    const perFactMs = (entry: { ms: number } | undefined, result: FadeResult) => (entry?.ms ?? 0) / result.faded;
    const sortsAll = largest.plan.nodes.includes('Sort') && /Seq Scan on facts/.test(largest.plan.nodes);
    const joinsByScan = /Hash Join ← Seq Scan on facts/.test(largest.plan.nodes);
    findings.push(
      `**The batch statement:** at ${formatCount(largest.size)} its first batch plans as ${largest.plan.nodes} and takes ${largest.plan.ms.toFixed(0)} ms ` +
        `under EXPLAIN ANALYZE.` +
        (sortsAll
          ? ` To take the oldest ${fadeBatch} it reads and sorts every eligible fact: \`facts_fade_idx\` is on (trust, recorded_at), which gives no ` +
            `recorded_at order across the two trust values of \`trust in ('active', 'candidate')\`, so the planner scans the table and sorts.`
          : '') +
        (joinsByScan ? ` The update then finds the ${fadeBatch} chosen rows with a hash join over another full scan of facts.` : '') +
        (sortsAll || joinsByScan ? ` Each batch costs in proportion to the table, so a whole fade grows with its square.` : '') +
        ` With an index on (recorded_at) where trust in ('active', 'candidate') (made for the measurement, not in the migrations), the same batch ` +
        `plans as ${largest.planWithIndex.nodes} and takes ${largest.planWithIndex.ms.toFixed(0)} ms.`,
    );
    findings.push(
      `**Where the time goes (${formatCount(largest.size)}${largest.stopped ? ', the part measured' : ''}):** of fade's ${formatDuration(largest.fadeSeconds)}, ${shares.join('; ')}; ` +
        `the rest is begin, commit and JavaScript. Per fact, from ${formatCount(first.size)} to ${formatCount(largest.size)} facts, the batch update went from ` +
        `${perFactMs(update(first), first).toFixed(3)} to ${perFactMs(update(largest), largest).toFixed(3)} ms and the audit events from ` +
        `${perFactMs(events(first), first).toFixed(3)} to ${perFactMs(events(largest), largest).toFixed(3)} ms (heads and inserts together). ` +
        `Inside Postgres, storing one event through \`roster_insert_events\` costs ${(part('roster_insert_events') - base).toFixed(0)} µs at ` +
        `${formatCount(largest.size)} (${(first.parts.find((candidate) => candidate.part.startsWith('roster_insert_events'))!.micros - first.parts[0]!.micros).toFixed(0)} µs at ` +
        `${formatCount(first.size)}); reading a chain's head through \`roster_event_heads\` ${(part('roster_event_heads') - base).toFixed(1)} µs, of which the advisory lock ` +
        `is ${(part('advisory') - base).toFixed(1)} µs and the last-row lookup ${(part('last event') - base).toFixed(1)} µs (the unique (agent_id, seq) index). ` +
        `From JavaScript, one \`audit.append\` (the keyed hash, then the heads and the insert) costs ${largest.roundTrip.appendEvent.toFixed(0)} µs ` +
        `(a bare \`select 1\` ${largest.roundTrip.select.toFixed(0)} µs); ${fadeBatch} at a time through \`audit.appendMany\`, as fade does, ` +
        `${largest.roundTrip.appendEventsPerEvent.toFixed(0)} µs per event.`,
    );
  }
  if (relay !== undefined) {
    tables.push({
      title: `Relay throughput: ${relay.jobs.toLocaleString('en-US')} jobs to BullMQ on one Redis (extract, embed, harvest in turn), ${relay.rounds} rounds each, interleaved`,
      columns: ['method', 'jobs', 'median s', 'jobs/s (median)', 'jobs/s (slowest – fastest round)', 'how'],
      rows: relay.methods.map((method) => {
        const rates = method.seconds.map((seconds) => relay.jobs / seconds);
        return [
          method.method,
          relay.jobs.toLocaleString('en-US'),
          median(method.seconds).toFixed(2),
          formatRate(relay.jobs / median(method.seconds)),
          `${formatRate(Math.min(...rates))} – ${formatRate(Math.max(...rates))}`,
          method.note,
        ];
      }),
    });
    const rate = (prefix: string) => {
      const method = relay.methods.find((candidate) => candidate.method.startsWith(prefix))!;
      return relay.jobs / median(method.seconds);
    };
    const relaySeconds = relay.methods[0]!.seconds.reduce((sum, seconds) => sum + seconds, 0);
    const inPostgres = [...relay.relayTimes.byKind.values()].reduce((sum, entry) => sum + entry.ms, 0) / 1000;
    findings.push(
      `**Relay:** ${formatRate(rate('relayOutbox'))} jobs/s (median of ${relay.rounds}), against ${formatRate(rate('queue.add in a loop'))} for \`queue.add\` ` +
        `in a loop and ${formatRate(rate(`queue.addBulk, chunks of ${relayBatch}`))} for \`addBulk\` in chunks of ${relayBatch}. ` +
        `${((100 * inPostgres) / relaySeconds).toFixed(0)}% of the relay's time is its Postgres statements (read a batch, mark it); the rest is ` +
        `one awaited \`add\` per row, as in the loop.`,
    );
  }
  return {
    notes: [
      `*Fade:* at each size, the facts are spread evenly over ${formatCount(options.agents)} agents (one person each), all \`active\`, ` +
        `\`general\`, recorded 60 days ago and never used, so every one is eligible; synthetic content, bulk-loaded as owner ` +
        `${loadBatch.toLocaleString('en-US')} rows per statement, then ANALYZE. Then \`fade(database, audit)\` from \`@roster/memory\` as the nightly job ` +
        `calls it (45 days, batches of ${fadeBatch}), timed; each statement it sends is timed from JavaScript by kind (the database is ` +
        `wrapped to time calls, each passed on unchanged). Afterwards every fact is checked to be faded with one event each. ` +
        `*first tenth / last tenth* are means over the first and last tenth of the batches (or calls), to show whether fade slows ` +
        `down as it goes. The parts of one audit event are then timed inside Postgres on the first agent, whose chain holds its ` +
        `share of the events, in a DO block rolled back afterwards.`,
      `*Relay:* ${relay?.jobs.toLocaleString('en-US') ?? 'no'} outbox rows (extract, embed and harvest jobs in turn, valid payloads) ` +
        `relayed by \`relayOutbox\` until none is pending; then the same jobs (same ids and payloads) added by \`queue.add\` one ` +
        `after another, and by \`addBulk\`; each method on a queue prefix of its own on the machine's Redis (${options.redis}), ` +
        `checked to hold every job, then obliterated; after a warm-up of 300 adds.`,
      `Everything runs on the embedded database (PGlite: Postgres in WebAssembly, single-threaded, in memory, in the ` +
        `benchmark's process), one statement at a time; a server Postgres would be faster per statement, and its round trip ` +
        `would be a network one instead.`,
    ],
    tables,
    findings,
  };
}
