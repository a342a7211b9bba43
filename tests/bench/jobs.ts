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
import { contentHash, createAuditLog, fade, fadeBatchStatement, protectedCategories, type MemoryEvent } from '@roster/memory';
import { createScopes } from './bulk-load.js';
import { formatDuration, progress, type BenchmarkReport } from './report.js';
import { createFact, createRandom, createVocabulary } from './synthetic.js';
import { measureRelay } from './jobs-relay.js';
import { buildReport, eventsKind, fadeBatch, headsKind, loadBatch, profileRepeats, updateKind, type FadeResult, type Options } from './jobs-report.js';
import { timedDatabase } from './jobs-timing.js';

export const title = 'Jobs: fade throughput and outbox relay throughput';

const seed = 20_240_612;
/** The installation key of the benchmark's databases: a new random one per run. */
const benchKey = new InstallationKey(randomBytes(32), 'bench');

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

export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  const options = parseOptions(args);
  const fades: FadeResult[] = [];
  for (const size of options.sizes) fades.push(await measureFade(size, options.agents, options.budget));
  const relay = options.jobs > 0 ? await measureRelay(options.jobs, options.redis) : undefined;
  return buildReport(fades, relay, options);
}

