/**
 * Conversation turns end to end: latency (p50, p95) and turns per second
 * through `POST /api/chat` (the real server, over a socket on loopback) and
 * through `core.handle` directly, on the offline engine, at 1, 10 and 50
 * conversations at once, with 0, 1k and 10k facts in each conversation's
 * scope. The core's own share is a turn's time less the engine's own (its
 * `run` less the memory tools it called, which are the core's work); the SQL
 * statements of a turn are counted by a wrapper around the Database that
 * passes every call on unchanged.
 *
 * On the embedded database always; on a server Postgres as well when
 * TEST_DATABASE_URL names one (a database of its own is created and dropped).
 *
 * Options: `--facts=0,1000,10000`, `--concurrency=1,10,50`, `--turns=80`
 * (turns per run at least; each conversation says at least 2).
 *
 * `--statistics` runs only a comparison instead (at 1k and 10k facts and 1
 * and 10 conversations at once unless `--facts` and `--concurrency` say
 * otherwise, `--rounds=4`): the same turns with the word columns' planner
 * statistics off, as migration 0025 leaves them, and on, as before it, in the
 * same database, the two alternated round by round. It writes its own section
 * of docs/benchmarks.md (`turns-statistics`).
 */
import type { AddressInfo } from 'node:net';
import { createLogger, parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import type { Agent, Engine, EngineTool, InboundMessage, Person } from '@roster/core';
import { migrate, openEmbeddedDatabase, type Database, type Scope, type ScopedTransaction, type Transaction } from '@roster/db';
import { openTestDatabase } from '@roster/db/testing';
import { createOfflineEngine } from '@roster/engines';
import { createHashingEmbedder } from '@roster/memory';
import { createRuntime, type Runtime } from '@roster/runtime';
import { createServer } from '@roster/server';
import { bulkLoadFacts } from './bulk-load.js';
import { formatMs, mean, percentile, progress, type BenchmarkReport, type ResultTable } from './report.js';
import { applyStatistics, roundOrder, statisticsConfigurations, statisticsLabels, wordColumns, type StatisticsConfiguration } from './statistics.js';
import { createFact, createRandom, createVocabulary, paraphrase } from './synthetic.js';
import { chat, signIn, type WebSession } from './web.js';

export const title = 'Turns: latency, throughput and the core’s share of a conversation turn';

const seed = 20_251_201;
const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** The core's own share at p50, one conversation at a time, 10k facts, embedded database. */
const targetCoreMs = 10;
/** A turn's round trips: route and store, read the prompt, store the reply (issue 21). */
const targetTransactions = 3;
const targetStatements = 15;
const warmUpTurns = 6;
const doors = ['core.handle', 'POST /api/chat'] as const;
type Door = (typeof doors)[number];

interface Options {
  facts: number[];
  concurrency: number[];
  turns: number;
  /** Only the comparison of the word columns without and with planner statistics. */
  statistics: boolean;
  /** Rounds of that comparison, each measuring both configurations. */
  rounds: number;
}

function parseOptions(args: readonly string[]): Options {
  const options: Options = { facts: [0, 1_000, 10_000], concurrency: [1, 10, 50], turns: 80, statistics: false, rounds: 4 };
  const list = (value: string) => value.split(',').map((item) => Number.parseInt(item.replace(/k$/i, '000'), 10));
  const given = new Set<string>();
  for (const arg of args) {
    const [key = '', value = ''] = arg.replace(/^--/, '').split('=');
    given.add(key);
    if (key === 'facts') options.facts = list(value);
    else if (key === 'concurrency') options.concurrency = list(value);
    else if (key === 'turns') options.turns = Number.parseInt(value, 10);
    else if (key === 'statistics' && value === '') options.statistics = true;
    else if (key === 'rounds') options.rounds = Number.parseInt(value, 10);
    else throw new Error(`Unknown option ${arg}: turns takes --facts=0,1000,10000, --concurrency=1,10,50, --turns=80, --statistics and --rounds=4.`);
  }
  if (options.statistics && !given.has('facts')) options.facts = [1_000, 10_000];
  if (options.statistics && !given.has('concurrency')) options.concurrency = [1, 10];
  if (
    options.facts.some((n) => !Number.isInteger(n) || n < 0) ||
    options.concurrency.some((n) => !Number.isInteger(n) || n < 1) ||
    !(options.turns > 0) ||
    !(options.rounds > 0)
  ) {
    throw new Error('--facts takes integers ≥ 0, --concurrency integers ≥ 1, --turns and --rounds positive integers.');
  }
  return options;
}

/**
 * Counts what the product sends to Postgres, at the Database layer: each
 * statement a transaction's function runs, plus the statements the layer
 * itself sends around it (packages/db/src/database.ts: begin, `set local
 * role`, the scope's `set_config` in one round trip, then commit). Every call
 * is passed on as it is.
 */
interface StatementCounter {
  statements: number;
  transactions: number;
  /** While set, each statement's time by its opening words, and the whole time of each transaction. */
  timings?: StatementTimings;
}

interface StatementTimings {
  statements: Map<string, { calls: number; ms: number }>;
  /** Time inside the layer's transactions (and `query`), statements included. */
  transactionMs: number;
}

/** A statement's opening words, as its row in the table of where a turn's time goes. */
function statementLabel(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= 60 ? flat : `${flat.slice(0, 57)}…`;
}

async function timed<T>(timings: StatementTimings | undefined, label: string | null, run: () => Promise<T>): Promise<T> {
  if (timings === undefined) return run();
  const started = performance.now();
  try {
    return await run();
  } finally {
    const ms = performance.now() - started;
    if (label === null) timings.transactionMs += ms;
    else {
      const entry = timings.statements.get(label) ?? { calls: 0, ms: 0 };
      entry.calls += 1;
      entry.ms += ms;
      timings.statements.set(label, entry);
    }
  }
}

const layerStatements = { withScope: 4, adminScope: 3, ownerScope: 2, query: 3 } as const;

function countStatements(database: Database, counter: StatementCounter): Database {
  const counted = <T extends Transaction>(tx: T): T =>
    ({
      ...tx,
      query: (text: string, params?: readonly unknown[]) => {
        counter.statements += 1;
        return timed(counter.timings, statementLabel(text), () => tx.query(text, params));
      },
    }) as T;
  const open = (kind: keyof typeof layerStatements) => {
    counter.transactions += 1;
    counter.statements += layerStatements[kind];
  };
  return {
    kind: database.kind,
    location: database.location,
    withScope: (scope, fn, options) => {
      open('withScope');
      return timed(counter.timings, null, () => database.withScope(scope, (tx) => fn(counted<ScopedTransaction>(tx)), options));
    },
    adminScope: (reason, fn) => {
      open('adminScope');
      return timed(counter.timings, null, () => database.adminScope(reason, (tx) => fn(counted(tx))));
    },
    ownerScope: (reason, fn) => {
      open('ownerScope');
      return timed(counter.timings, null, () => database.ownerScope(reason, (tx) => fn(counted(tx))));
    },
    ownerSession: (reason, fn) => database.ownerSession(reason, (session) => fn(counted(session))),
    query: (text, params) => {
      open('query');
      counter.statements += 1;
      return timed(counter.timings, null, () => timed(counter.timings, statementLabel(text), () => database.query(text, params)));
    },
    info: () => database.info(),
    close: () => database.close(),
  };
}

/** One turn as measured. */
interface TurnRecord {
  ms: number;
  /** The engine's own time: its `run`, less the memory tools it called. */
  engineMs: number;
  /** What the message asks (`messageFor`): remember, recall or plain talk. */
  kind?: TurnKind;
  /** Counted for this turn alone, when no other turn overlapped it (one conversation at a time). */
  statements?: number;
  transactions?: number;
}

type TurnKind = 'remember' | 'recall' | 'talk';
const turnKinds: readonly TurnKind[] = ['talk', 'remember', 'recall'];

/** The kind of the message `messageFor` writes for turn number `turn`. */
function kindOf(turn: number): TurnKind {
  return turn % 4 === 0 ? 'remember' : turn % 4 === 1 ? 'recall' : 'talk';
}

interface RunResult {
  database: 'embedded' | 'server';
  facts: number;
  door: Door;
  concurrency: number;
  turns: TurnRecord[];
  seconds: number;
  statements: number;
  transactions: number;
  /** One conversation through core.handle only: where its time went, statement by statement. */
  timings?: StatementTimings;
  /** In the statistics comparison: which configuration of the word columns it ran under. */
  configuration?: StatisticsConfiguration;
}

/** Engines that time themselves: the offline engine, with its tools timed apart. */
function timedEngines(records: Map<string, TurnRecord>): (agent: Agent) => Engine {
  const engines = new Map<string, Engine>();
  return (agent) => {
    let engine = engines.get(agent.id);
    if (engine === undefined) {
      const offline = createOfflineEngine({ agentName: agent.name });
      engine = {
        id: offline.id,
        local: offline.local,
        accepts: offline.accepts,
        async run(request) {
          let toolMs = 0;
          const tools = request.tools.map(
            (tool): EngineTool => ({
              ...tool,
              execute: async (input, options) => {
                const started = performance.now();
                try {
                  return await tool.execute(input, options);
                } finally {
                  toolMs += performance.now() - started;
                }
              },
            }),
          );
          const started = performance.now();
          try {
            return await offline.run({ ...request, tools });
          } finally {
            const record = records.get(request.message);
            if (record !== undefined) record.engineMs += performance.now() - started - toolMs;
          }
        },
      };
      engines.set(agent.id, engine);
    }
    return engine;
  };
}

/** What one conversation says, turn by turn: a quarter remember, a quarter ask, half talk. */
function messageFor(random: () => number, vocabulary: ReturnType<typeof createVocabulary>, known: readonly string[], conversation: number, turn: number): string {
  const about = known.length > 0 ? paraphrase(random, known[Math.floor(random() * known.length)]!) : paraphrase(random, createFact(random, vocabulary));
  // The tag keeps every message unique, so that the engine's time finds its turn.
  const tag = `(c${conversation} t${turn})`;
  switch (turn % 4) {
    case 0:
      return `remember that ${createFact(random, vocabulary).replace(/\.$/, '')} ${tag}`;
    case 1:
      return `what do you know about ${about} ${tag}?`;
    default:
      return `${about} ${tag}`;
  }
}

interface Fixture {
  runtime: Runtime;
  database: Database;
  counter: StatementCounter;
  records: Map<string, TurnRecord>;
  people: Record<Door, Person[]>;
  /** Signed-in sessions of the HTTP door's people. */
  sessions: WebSession[];
  base: string;
  known: string[];
  close(): Promise<void>;
}

async function openFixture(kind: 'embedded' | 'server', facts: number, people: number): Promise<Fixture> {
  let raw: Database;
  let cleanup: () => Promise<void>;
  if (kind === 'embedded') {
    raw = await openEmbeddedDatabase('memory://');
    await migrate(raw);
    cleanup = () => raw.close();
  } else {
    const test = await openTestDatabase({ serverUrl: process.env.TEST_DATABASE_URL });
    raw = test.database;
    cleanup = () => test.cleanup();
  }
  const counter: StatementCounter = { statements: 0, transactions: 0 };
  const database = countStatements(raw, counter);
  const records = new Map<string, TurnRecord>();
  const config = parseConfig({ LOG_LEVEL: 'silent' });
  const embedder = createHashingEmbedder();
  const runtime = await createRuntime({ config, database, key: testInstallationKey, embedder, engineFor: timedEngines(records) });
  const agent = await runtime.core.directory.addAgent({ name: 'Scout', job: 'remembers what people tell it' });
  const core: Person[] = [];
  const http: Person[] = [];
  for (let index = 0; index < people; index += 1) {
    core.push(await runtime.core.directory.addPerson({ name: `Core Person ${index}` }));
    http.push(await runtime.core.directory.addPerson({ name: `Web Person ${index}` }));
  }

  const vocabulary = createVocabulary(seed);
  const random = createRandom(seed + facts);
  const known = Array.from({ length: facts }, () => createFact(random, vocabulary));
  if (facts > 0) {
    progress(`turns ${kind} ${facts}: loading ${facts} agent-wide facts with vectors`);
    const scope: Scope = { agentId: agent.id, personId: null, audience: 'agent' };
    await bulkLoadFacts(raw, embedder, known.map((content) => ({ scope, content })));
  }
  // What the vacuum job (or a server's autovacuum) does after a bulk load: statistics for the planner.
  // As the owner: roster_ops may read the tables but not analyze them (Postgres skips them with a warning).
  await raw.ownerSession('bench: analyze after bulk load, as the vacuum job does', (session) => session.query('analyze'));

  const app = await createServer({ config, database, runtime, redisUrl, logger: createLogger(config), key: testInstallationKey });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const sessions: WebSession[] = [];
  for (const person of http) sessions.push(await signIn(raw, base, person.id));
  return {
    runtime,
    database,
    counter,
    records,
    people: { 'core.handle': core, 'POST /api/chat': http },
    sessions,
    base,
    known,
    async close() {
      await app.close();
      await cleanup();
    },
  };
}

/** One turn through a door; rejects unless the agent answered. */
async function sayThrough(fixture: Fixture, door: Door, conversation: number, text: string): Promise<void> {
  if (door === 'core.handle') {
    const person = fixture.people[door][conversation]!;
    const inbound: InboundMessage = { channel: 'web', conversation: { externalId: `solo:${person.id}`, kind: 'dm' }, sender: { personId: person.id }, text };
    const result = await fixture.runtime.core.handle(inbound, {});
    if (result.replies.length !== 1) throw new Error(`core.handle gave ${result.replies.length} replies: ${result.notice ?? ''}`);
    return;
  }
  await chat(fixture.base, fixture.sessions[conversation]!, { message: text });
}

/** `round` > 0 says other messages than round 0 (a repeated `remember that` would find its fact already known). */
async function measure(fixture: Fixture, kind: 'embedded' | 'server', facts: number, door: Door, concurrency: number, options: Options, round = 0): Promise<RunResult> {
  const perConversation = Math.max(2, Math.ceil(options.turns / concurrency));
  const random = createRandom(seed * 3 + facts * 7 + concurrency + round * 7_919);
  const vocabulary = createVocabulary(seed);
  const turns: TurnRecord[] = [];
  const statementsBefore = fixture.counter.statements;
  const transactionsBefore = fixture.counter.transactions;
  // Timed statement by statement only when turns do not overlap, so that each statement's time is its own.
  const timings: StatementTimings | undefined = door === 'core.handle' && concurrency === 1 ? { statements: new Map(), transactionMs: 0 } : undefined;
  fixture.counter.timings = timings;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, conversation) => {
      for (let turn = 0; turn < perConversation; turn += 1) {
        const number = turn + concurrency * 1000 + round * 1_000_000;
        const text = messageFor(random, vocabulary, fixture.known, conversation, number);
        const record: TurnRecord = { ms: 0, engineMs: 0, kind: kindOf(number) };
        fixture.records.set(text, record);
        const counted = { statements: fixture.counter.statements, transactions: fixture.counter.transactions };
        const before = performance.now();
        await sayThrough(fixture, door, conversation, text);
        record.ms = performance.now() - before;
        if (concurrency === 1) {
          record.statements = fixture.counter.statements - counted.statements;
          record.transactions = fixture.counter.transactions - counted.transactions;
        }
        fixture.records.delete(text);
        turns.push(record);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  fixture.counter.timings = undefined;
  return {
    ...(timings === undefined ? {} : { timings }),
    database: kind,
    facts,
    door,
    concurrency,
    turns,
    seconds,
    statements: fixture.counter.statements - statementsBefore,
    transactions: fixture.counter.transactions - transactionsBefore,
  };
}

export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  const options = parseOptions(args);
  if (options.statistics) return runStatistics(options);
  const kinds: Array<'embedded' | 'server'> = ['embedded'];
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (serverUrl !== undefined && serverUrl !== '') kinds.push('server');
  else progress('turns: TEST_DATABASE_URL is not set; the server Postgres runs are skipped');
  const people = Math.max(...options.concurrency);
  const results: RunResult[] = [];
  for (const kind of kinds) {
    for (const facts of options.facts) {
      const fixture = await openFixture(kind, facts, people);
      try {
        for (const door of doors) {
          progress(`turns ${kind} ${facts}: warming up ${door}`);
          for (let turn = 0; turn < warmUpTurns; turn += 1) await sayThrough(fixture, door, 0, messageFor(createRandom(turn), createVocabulary(seed), fixture.known, 0, turn));
          for (const concurrency of options.concurrency) {
            const result = await measure(fixture, kind, facts, door, concurrency, options);
            results.push(result);
            progress(
              `turns ${kind} ${facts} facts, ${door}, ${concurrency} at once: p50 ${formatMs(percentile(result.turns.map((t) => t.ms), 50))} ms, ` +
                `${(result.turns.length / result.seconds).toFixed(1)} turns/s, ${(result.statements / result.turns.length).toFixed(1)} statements per turn`,
            );
          }
        }
      } finally {
        await fixture.close();
      }
    }
  }
  return buildReport(results, options, kinds.includes('server'));
}

/** The statements that take most of a turn's time, per fact count: ms and calls per turn. */
function timeTable(runs: RunResult[]): ResultTable {
  const perTurn = (run: RunResult, ms: number) => ms / run.turns.length;
  const largest = runs[runs.length - 1]!;
  const labels = [...largest.timings!.statements.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 14).map(([label]) => label);
  const cell = (run: RunResult, label: string) => {
    const entry = run.timings!.statements.get(label);
    return entry === undefined ? '–' : `${formatMs(perTurn(run, entry.ms))} (${(entry.calls / run.turns.length).toFixed(2)})`;
  };
  const statementMs = (run: RunResult) => [...run.timings!.statements.values()].reduce((sum, entry) => sum + entry.ms, 0);
  const otherMs = (run: RunResult) =>
    [...run.timings!.statements.entries()].filter(([label]) => !labels.includes(label)).reduce((sum, [, entry]) => sum + entry.ms, 0);
  const turnMs = (run: RunResult) => run.turns.reduce((sum, turn) => sum + turn.ms, 0);
  return {
    title: 'Where a turn’s time goes: the embedded database, core.handle, one conversation; ms per turn (calls per turn) of each statement, by its opening words, the largest at the most facts first',
    columns: ['statement', ...runs.map((run) => `${formatCount(run.facts)} facts`)],
    rows: [
      ...labels.map((label) => [`\`${label.replaceAll('`', "'").replaceAll('|', '\\|')}\``, ...runs.map((run) => cell(run, label))]),
      ['every other statement', ...runs.map((run) => formatMs(perTurn(run, otherMs(run))))],
      ['the layer around them: begin, role, scope settings, commit', ...runs.map((run) => formatMs(perTurn(run, run.timings!.transactionMs - statementMs(run))))],
      ['outside the database (the core’s JavaScript, the engine)', ...runs.map((run) => formatMs(perTurn(run, turnMs(run) - run.timings!.transactionMs)))],
      ['a whole turn, mean', ...runs.map((run) => formatMs(perTurn(run, turnMs(run))))],
    ],
  };
}

function formatCount(size: number): string {
  return size >= 1000 && size % 1000 === 0 ? `${size / 1000}k` : String(size);
}

function buildReport(results: RunResult[], options: Options, server: boolean): BenchmarkReport {
  const core = (turn: TurnRecord) => turn.ms - turn.engineMs;
  const table = (kind: 'embedded' | 'server'): ResultTable => ({
    title: `${kind === 'embedded' ? 'Embedded database (PGlite, in process)' : 'Server Postgres (TEST_DATABASE_URL)'}: one row per door, facts in the scope and conversations at once`,
    columns: ['door', 'facts in scope', 'at once', 'turns', 'p50 ms', 'p95 ms', 'turns/s', 'core share p50 ms', 'engine p50 ms', 'SQL statements per turn', 'transactions per turn'],
    rows: results
      .filter((result) => result.database === kind)
      .map((result) => [
        result.door,
        formatCount(result.facts),
        String(result.concurrency),
        String(result.turns.length),
        formatMs(percentile(result.turns.map((turn) => turn.ms), 50)),
        formatMs(percentile(result.turns.map((turn) => turn.ms), 95)),
        (result.turns.length / result.seconds).toFixed(1),
        formatMs(percentile(result.turns.map(core), 50)),
        formatMs(percentile(result.turns.map((turn) => turn.engineMs), 50)),
        (result.statements / result.turns.length).toFixed(1),
        (result.transactions / result.turns.length).toFixed(1),
      ]),
  });
  const tables = [table('embedded'), ...(server ? [table('server')] : [])];
  const timedRuns = results.filter((result) => result.database === 'embedded' && result.timings !== undefined);
  if (timedRuns.length > 0) tables.push(timeTable(timedRuns));
  const goal = results.find((result) => result.database === 'embedded' && result.door === 'core.handle' && result.concurrency === 1 && result.facts === 10_000);
  const findings: string[] = [];
  if (goal !== undefined) {
    const share = percentile(goal.turns.map(core), 50);
    findings.push(
      `**Goal, the core's own share ≤ ${targetCoreMs} ms at p50 with 10k facts on the embedded database (core.handle, one conversation):** ` +
        `${formatMs(share)} ms (**${share <= targetCoreMs ? 'met' : 'missed'}**); the engine's own p50 is ${formatMs(percentile(goal.turns.map((turn) => turn.engineMs), 50))} ms, ` +
        `${(goal.statements / goal.turns.length).toFixed(1)} SQL statements in ${(goal.transactions / goal.turns.length).toFixed(1)} transactions per turn.`,
    );
  }
  const alone = results.filter((result) => result.database === 'embedded' && result.door === 'core.handle' && result.concurrency === 1);
  if (alone.length > 0) {
    const perKind = turnKinds.map((kind) => {
      const turns = alone.flatMap((result) => result.turns).filter((turn) => turn.kind === kind && turn.statements !== undefined);
      const statements = mean(turns.map((turn) => turn.statements!));
      const transactions = mean(turns.map((turn) => turn.transactions!));
      return `${kind === 'talk' ? 'plain talk' : kind === 'remember' ? '`remember that …` (the engine calls `remember`)' : '`what do you know about …` (the engine calls `recall`)'}: ${statements.toFixed(1)} statements in ${transactions.toFixed(1)} transactions`;
    });
    findings.push(
      `**Goal, ≤ ${targetTransactions} transactions and ≤ ${targetStatements} statements per turn, by kind of turn** (core.handle, one conversation at a time, ` +
        `so each turn is counted alone; every fact count): ${perKind.join('; ')}.`,
    );
  }
  const http = results.filter((result) => result.database === 'embedded' && result.door === 'POST /api/chat' && result.concurrency === 1);
  const direct = results.filter((result) => result.database === 'embedded' && result.door === 'core.handle' && result.concurrency === 1);
  if (http.length > 0 && direct.length > 0) {
    const extra = mean(http.map((result, index) => percentile(result.turns.map((turn) => turn.ms), 50) - percentile(direct[index]!.turns.map((turn) => turn.ms), 50)));
    findings.push(
      `**What the HTTP door adds:** ${formatMs(extra)} ms at p50 on average over the fact counts, one conversation at a time (the session's lookup, ` +
        `the body's validation, the stream of server-sent events and the socket on loopback).`,
    );
  }
  if (!server) findings.push('Server Postgres: skipped (TEST_DATABASE_URL is not set).');
  return {
    notes: [
      `One agent (offline engine) and ${Math.max(...options.concurrency)} people per door; each conversation is one person's ` +
        `web conversation with the agent (one conversation per person, as the web page has it) and says its turns one after ` +
        `another; *at once* conversations run concurrently. A quarter of the turns are \`remember that …\` (a fact written ` +
        `with its vector and audit event), a quarter \`what do you know about …\` (a recall), half plain talk; every turn ` +
        `stores the message, reads the agent's lessons, searches memory for the prompt, reads the history, runs the engine, ` +
        `stores the reply and writes the follow-up jobs to the outbox (no worker runs). *facts in scope*: synthetic ` +
        `agent-wide facts (tests/bench/synthetic.ts) with hashing vectors, bulk-loaded before the turns and analyzed as the ` +
        `vacuum job does; every person's private scope reads them, so each conversation's search looks through that many ` +
        `facts (at 10k the scope is all of the table's vectors, so the vector arm goes through HNSW: search's \`prefersGraph\`; ` +
        `at 1k it scans them exactly). *Where a turn's time goes* times each statement from JavaScript, as the counter ` +
        `sees it (its round trip included), in the one-conversation core.handle rows only, so that no two turns overlap.`,
      `*core.handle* calls the core in process, as the web route does; *POST /api/chat* is the real server (Fastify) on ` +
        `loopback (a new connection per request), a signed-in session cookie and CSRF header per person, the whole event stream read. At least ` +
        `${options.turns} turns per row (each conversation at least 2), after ${warmUpTurns} warm-up turns per door. ` +
        `*core share* is a turn's time less the engine's own time (the offline engine's \`run\` less the memory tools it ` +
        `called, which are the core's work); the offline engine needs no model, so almost all of a turn is the core's. ` +
        `*SQL statements per turn* are counted by a wrapper around the Database (each statement a transaction runs, plus ` +
        `begin, \`set local role\`, the scope's settings and commit that the layer sends around it; the first three go in one ` +
        `round trip, and a graph search's own settings go in the scope's statement), divided by the turns of the row.`,
      `The embedded database is one PGlite session in the benchmark's process: concurrent conversations take turns on it, ` +
        `so latency grows with the conversations at once while turns per second stay about flat.`,
    ],
    tables,
    findings,
  };
}

/**
 * The statistics comparison: one fixture per database and fact count, and in
 * each round both configurations of the word columns' statistics, one after
 * the other (the first alternating between rounds), each applied and
 * analysed as the owner, warmed up, then measured at every door and
 * concurrency.
 */
async function runStatistics(options: Options): Promise<BenchmarkReport> {
  const kinds: Array<'embedded' | 'server'> = ['embedded'];
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (serverUrl !== undefined && serverUrl !== '') kinds.push('server');
  else progress('turns: TEST_DATABASE_URL is not set; the server Postgres runs are skipped');
  const people = Math.max(...options.concurrency);
  const results: RunResult[] = [];
  /** Word columns holding statistics after the last switch to each configuration, by database and fact count. */
  const sampled = new Map<string, Record<StatisticsConfiguration, number>>();
  for (const kind of kinds) {
    for (const facts of options.facts) {
      const fixture = await openFixture(kind, facts, people);
      const counts: Record<StatisticsConfiguration, number> = { without: 0, with: 0 };
      sampled.set(`${kind} ${facts}`, counts);
      let warmUps = 0;
      try {
        for (let round = 0; round < options.rounds; round += 1) {
          for (const configuration of roundOrder(round)) {
            progress(`turns ${kind} ${facts}: round ${round + 1} of ${options.rounds}, ${statisticsLabels[configuration]}`);
            counts[configuration] = await applyStatistics(fixture.database, configuration);
            for (const door of doors) {
              for (let turn = 0; turn < warmUpTurns; turn += 1, warmUps += 1) {
                await sayThrough(fixture, door, 0, messageFor(createRandom(seed + warmUps), createVocabulary(seed), fixture.known, 0, 999_000_000 + warmUps));
              }
              for (const concurrency of options.concurrency) {
                // Each (round, configuration) says messages of its own.
                const result = await measure(fixture, kind, facts, door, concurrency, options, round * 2 + statisticsConfigurations.indexOf(configuration) + 1);
                results.push({ ...result, configuration });
              }
            }
          }
        }
      } finally {
        await fixture.close();
      }
    }
  }
  return buildStatisticsReport(results, options, sampled, kinds.includes('server'));
}

/** The runs of one row and configuration, every round's turns together. */
function poolRuns(runs: RunResult[]): RunResult {
  const first = runs[0]!;
  const timings: StatementTimings | undefined = first.timings === undefined ? undefined : { statements: new Map(), transactionMs: 0 };
  for (const run of runs) {
    if (timings === undefined || run.timings === undefined) continue;
    timings.transactionMs += run.timings.transactionMs;
    for (const [label, entry] of run.timings.statements) {
      const pooled = timings.statements.get(label) ?? { calls: 0, ms: 0 };
      pooled.calls += entry.calls;
      pooled.ms += entry.ms;
      timings.statements.set(label, pooled);
    }
  }
  return {
    ...first,
    ...(timings === undefined ? {} : { timings }),
    turns: runs.flatMap((run) => run.turns),
    seconds: runs.reduce((sum, run) => sum + run.seconds, 0),
    statements: runs.reduce((sum, run) => sum + run.statements, 0),
    transactions: runs.reduce((sum, run) => sum + run.transactions, 0),
  };
}

function buildStatisticsReport(results: RunResult[], options: Options, sampled: Map<string, Record<StatisticsConfiguration, number>>, server: boolean): BenchmarkReport {
  const rows: Array<{ kind: 'embedded' | 'server'; facts: number; door: Door; concurrency: number; pooled: Record<StatisticsConfiguration, RunResult> }> = [];
  for (const kind of ['embedded', 'server'] as const) {
    for (const facts of options.facts) {
      for (const door of doors) {
        for (const concurrency of options.concurrency) {
          const of = (configuration: StatisticsConfiguration) =>
            results.filter((result) => result.database === kind && result.facts === facts && result.door === door && result.concurrency === concurrency && result.configuration === configuration);
          if (of('without').length === 0 || of('with').length === 0) continue;
          rows.push({ kind, facts, door, concurrency, pooled: { without: poolRuns(of('without')), with: poolRuns(of('with')) } });
        }
      }
    }
  }
  const p = (run: RunResult, q: number) => percentile(run.turns.map((turn) => turn.ms), q);
  const perSecond = (run: RunResult) => (run.turns.length / run.seconds).toFixed(1);
  const latency: ResultTable = {
    title:
      `Turns with the word columns without statistics (this version) and with them (as before migration 0025): ` +
      `p50 and p95 of every turn of ${options.rounds} rounds per configuration`,
    columns: ['database', 'door', 'facts in scope', 'at once', 'turns each', 'without: p50 ms', 'p95 ms', 'turns/s', 'with: p50 ms', 'p95 ms', 'turns/s', 'p50 with ÷ without'],
    rows: rows.map(({ kind, facts, door, concurrency, pooled }) => [
      kind,
      door,
      formatCount(facts),
      String(concurrency),
      String(pooled.without.turns.length),
      formatMs(p(pooled.without, 50)),
      formatMs(p(pooled.without, 95)),
      perSecond(pooled.without),
      formatMs(p(pooled.with, 50)),
      formatMs(p(pooled.with, 95)),
      perSecond(pooled.with),
      `${(p(pooled.with, 50) / p(pooled.without, 50)).toFixed(2)}×`,
    ]),
  };
  const fullTextMs = (run: RunResult) => {
    const entries = [...(run.timings?.statements.entries() ?? [])].filter(([label]) => label.includes('roster_search_ranked'));
    return entries.reduce((sum, [, entry]) => sum + entry.ms, 0) / run.turns.length;
  };
  const statementsMs = (run: RunResult) => [...(run.timings?.statements.values() ?? [])].reduce((sum, entry) => sum + entry.ms, 0) / run.turns.length;
  const statementTable: ResultTable = {
    title:
      'The full-text arm’s statement (`roster_search_ranked`, where the planner used `search_vector`’s statistics) and every statement, ' +
      'core.handle, one conversation: ms per turn (the mean), and the word columns holding statistics after the ANALYZE',
    columns: ['database', 'facts in scope', 'configuration', 'word columns with statistics', 'roster_search_ranked ms per turn', 'all statements ms per turn', 'a whole turn, mean ms', 'SQL statements per turn'],
    rows: rows
      .filter((row) => row.door === 'core.handle' && row.concurrency === 1)
      .flatMap(({ kind, facts, pooled }) =>
        statisticsConfigurations.map((configuration) => {
          const run = pooled[configuration];
          return [
            kind,
            formatCount(facts),
            statisticsLabels[configuration],
            `${sampled.get(`${kind} ${facts}`)?.[configuration] ?? '–'} of ${wordColumns.length}`,
            formatMs(fullTextMs(run)),
            formatMs(statementsMs(run)),
            formatMs(mean(run.turns.map((turn) => turn.ms))),
            (run.statements / run.turns.length).toFixed(1),
          ];
        }),
      ),
  };
  const findings: string[] = [];
  const ratios = rows.map((row) => p(row.pooled.with, 50) / p(row.pooled.without, 50));
  if (ratios.length > 0) {
    findings.push(
      `**p50 with the word columns' statistics ÷ without them:** from ${Math.min(...ratios).toFixed(2)}× to ${Math.max(...ratios).toFixed(2)}× ` +
        `over the ${ratios.length} rows (median ${percentile(ratios, 50).toFixed(2)}×).`,
    );
  }
  if (!server) findings.push('Server Postgres: skipped (TEST_DATABASE_URL is not set).');
  return {
    section: { name: 'turns-statistics', title: 'Turns: the word columns with and without planner statistics' },
    notes: [
      `A focused run of the turns benchmark (\`--statistics\`): only this comparison, at ${options.facts.map(formatCount).join(' and ')} facts in the scope ` +
        `and ${options.concurrency.join(' and ')} conversation${options.concurrency.length === 1 && options.concurrency[0] === 1 ? '' : 's'} at once, ` +
        `not the full run's tables (see the section above), which it leaves as they were. Same agent, people, messages, doors and engine as there.`,
      `Migration 0025 sets the statistics target of the ${wordColumns.length} columns that can hold people's words (@roster/memory's ` +
        `\`erasedPlaces\`: facts.content, facts.search_vector, messages.content, outbox.payload and the rest) to 0, so ANALYZE no longer ` +
        `samples them, and the planner estimates conditions on them from its defaults. *without* is this version; *with* is as before ` +
        `the migration: the same columns set back to the default target (\`SET STATISTICS -1\`). Each configuration is applied in the ` +
        `benchmark's own database, then the whole database is analysed as its owner, as after the bulk load (roster_ops may not); going ` +
        `back to *without* also removes the samples the *with* ANALYZE took (pg_clear_attribute_stats on Postgres 18, the embedded ` +
        `database; a delete from pg_statistic, as the superuser, on an older server).`,
      `One fixture per database and fact count; ${options.rounds} rounds, each measuring both configurations one after the other, the ` +
        `first of the pair alternating between rounds; after each switch ${warmUpTurns} warm-up turns per door, then every door and ` +
        `concurrency says at least ${options.turns} turns of new messages. The tables grow as the rounds go (messages, facts remembered, ` +
        `outbox rows), equally for both configurations. Other people's tests share this machine's 2 cores, so one row's ratio moves ` +
        `by 10–20% on noise alone: an effect of the statistics would hold across fact counts, doors and databases.`,
    ],
    tables: [latency, statementTable],
    findings,
  };
}
