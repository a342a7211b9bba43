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
import { migrate, openEmbeddedDatabase, type Database, type Scope } from '@roster/db';
import { openTestDatabase } from '@roster/db/testing';
import { createOfflineEngine } from '@roster/engines';
import { createHashingEmbedder } from '@roster/memory';
import { createRuntime, type Runtime } from '@roster/runtime';
import { createServer } from '@roster/server';
import { bulkLoadFacts } from './bulk-load.js';
import { formatMs, percentile, progress, type BenchmarkReport } from './report.js';
import { applyStatistics, roundOrder, statisticsConfigurations, statisticsLabels, type StatisticsConfiguration } from './statistics.js';
import { createFact, createRandom, createVocabulary, paraphrase } from './synthetic.js';
import { chat, signIn, type WebSession } from './web.js';
import { countStatements, type StatementCounter, type StatementTimings } from './turn-statements.js';
import { buildReport, buildStatisticsReport, doors, kindOf, warmUpTurns, type Door, type Options, type RunResult, type TurnRecord } from './turns-report.js';

export const title = 'Turns: latency, throughput and the core’s share of a conversation turn';

const seed = 20_251_201;
const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

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

/**
 * One turn in each of the row's conversations, all at once, before the row is
 * measured: a service with that many conversations going has started them
 * (a conversation's first turn also creates it) and has its pool's
 * connections open, so the row measures turns, not the start of a burst.
 */
async function warmUpConversations(fixture: Fixture, door: Door, concurrency: number): Promise<void> {
  const vocabulary = createVocabulary(seed);
  await Promise.all(
    Array.from({ length: concurrency }, (_, conversation) =>
      sayThrough(fixture, door, conversation, messageFor(createRandom(seed + concurrency * 1_000 + conversation), vocabulary, fixture.known, conversation, 900_000 + concurrency * 1_000 + conversation)),
    ),
  );
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
        // The conversation shifts the kind, so that every row has the same mix of kinds however few turns each conversation says.
        const number = turn + conversation + concurrency * 1000 + round * 1_000_000;
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
            await warmUpConversations(fixture, door, concurrency);
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

