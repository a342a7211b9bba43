/**
 * Scaling out: turns per second and latency (p50, p95) of whole turns
 * through `POST /api/chat` with one `roster start` and with two (each a
 * server, a worker and a gateway) on one database and one Redis, the offline
 * engine, at 10 and 50 conversations at once. Each conversation is one
 * person's, signed in; the conversations are spread over the servers round
 * robin. Every configuration runs on an installation of its own (a new
 * database, its own ROSTER_QUEUE_PREFIX), made by the same helpers as the
 * scale-out tests (tests/support/installation.ts).
 *
 * On a server Postgres when TEST_DATABASE_URL names one (a database of its
 * own is created on it and dropped); on the embedded database always, where
 * both processes are clients of the one host process that holds the data
 * folder, as a second table.
 *
 * Options: `--concurrency=10,50`, `--processes=1,2`, `--turns=600` (turns
 * per row at least; each conversation says at least 2).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDirectory } from '@roster/core';
import { makeClusterTemplate } from '@roster/db/testing';
import { embeddedInstallation, serverInstallation, type TestInstallation } from '../support/installation.js';
import { endRoster, runRoster, startListening, type RunningRoster } from '../support/roster-process.js';
import { formatMs, percentile, progress, type BenchmarkReport, type ResultTable } from './report.js';
import { createFact, createRandom, createVocabulary, paraphrase } from './synthetic.js';
import { chat, signIn, type WebSession } from './web.js';

export const title = 'Scale: turns per second with one and with two roster start on one database';

const seed = 20_261_202;
/** Turns said before measuring, per process, by people of their own: connections, plans and caches warm. */
const warmUpTurns = 6;

interface Options {
  concurrency: number[];
  processes: number[];
  turns: number;
}

function parseOptions(args: readonly string[]): Options {
  const options: Options = { concurrency: [10, 50], processes: [1, 2], turns: 600 };
  const list = (value: string) => value.split(',').map((item) => Number.parseInt(item, 10));
  for (const arg of args) {
    const [key, value = ''] = arg.replace(/^--/, '').split('=');
    if (key === 'concurrency') options.concurrency = list(value);
    else if (key === 'processes') options.processes = list(value);
    else if (key === 'turns') options.turns = Number.parseInt(value, 10);
    else throw new Error(`Unknown option ${arg}: scale takes --concurrency=10,50, --processes=1,2 and --turns=600.`);
  }
  if ([...options.concurrency, ...options.processes].some((n) => !Number.isInteger(n) || n < 1) || !(options.turns > 0)) {
    throw new Error('--concurrency and --processes take integers ≥ 1, --turns a positive integer.');
  }
  return options;
}

type Kind = TestInstallation['kind'];

interface RowResult {
  kind: Kind;
  processes: number;
  concurrency: number;
  /** Each turn's milliseconds, from the request to the end of its event stream. */
  turns: number[];
  seconds: number;
  /** Cores in use over the row, on average: the whole machine, the roster processes, the database's processes. */
  cores: { machine: number; roster: number; database: number };
}

const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU time a process has used, in clock ticks (user and system), or 0 when it has ended. */
function processTicks(pid: number): number {
  try {
    // The fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 12th and 13th.
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** Busy clock ticks of the whole machine, all cores (everything but idle and iowait). */
function machineTicks(): number {
  const [, ...values] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const ticks = values.map(Number);
  return ticks.slice(0, 8).reduce((sum, value) => sum + value, 0) - ticks[3]! - ticks[4]!;
}

/** The processes of the database: the embedded folder's host (its lock file names it), or every postgres process of the machine. */
function databasePids(installation: TestInstallation): number[] {
  if (installation.kind === 'embedded') {
    const pid = Number.parseInt(fs.readFileSync(path.join(installation.env.ROSTER_DATA_DIR!, 'pglite', 'roster.lock'), 'utf8'), 10);
    return Number.isInteger(pid) ? [pid] : [];
  }
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Starts counting CPU; the function it returns gives the cores used on average since. */
function countCores(installation: TestInstallation, rosterPids: number[]): () => RowResult['cores'] {
  const database = new Map(databasePids(installation).map((pid) => [pid, processTicks(pid)]));
  const roster = rosterPids.map((pid) => processTicks(pid));
  const machine = machineTicks();
  const started = performance.now();
  return () => {
    const seconds = (performance.now() - started) / 1000;
    const cores = (ticks: number) => ticks / ticksPerSecond / seconds;
    // A backend that started meanwhile counts from zero; one that ended meanwhile is lost (the pools keep theirs open).
    const databaseTicks = databasePids(installation).reduce((sum, pid) => sum + processTicks(pid) - (database.get(pid) ?? 0), 0);
    const rosterTicks = rosterPids.reduce((sum, pid, index) => sum + processTicks(pid) - roster[index]!, 0);
    return { machine: cores(machineTicks() - machine), roster: cores(rosterTicks), database: cores(databaseTicks) };
  };
}

/** A signed-in person and the server their conversation goes to. */
/** A signed-in person and the server their conversation goes to. */
interface Speaker extends WebSession {
  address: string;
}

/** What a conversation says at its turn `turn`: a quarter remember, a quarter ask about what it said, half talk about it. */
function messageFor(random: () => number, vocabulary: ReturnType<typeof createVocabulary>, known: string[], tag: string, turn: number): string {
  const about = paraphrase(random, known.length > 0 ? known[Math.floor(random() * known.length)]! : createFact(random, vocabulary));
  switch (turn % 4) {
    case 0: {
      const fact = createFact(random, vocabulary).replace(/\.$/, '');
      known.push(fact);
      return `remember that ${fact} (${tag})`;
    }
    case 1:
      return `what do you know about ${about} (${tag})?`;
    default:
      return `${about} (${tag})`;
  }
}

/** An installation of `kind` with `processes` roster start on it, and people signed in, spread over the servers. */
interface Fixture {
  installation: TestInstallation;
  servers: Array<{ roster: RunningRoster; address: string }>;
  /** Signs a new person in on the server `index` picks (modulo the servers). */
  speaker(index: number): Promise<Speaker>;
  close(): Promise<void>;
}

async function openFixture(kind: Kind, processes: number): Promise<Fixture> {
  const installation = kind === 'server' ? await serverInstallation(process.env.TEST_DATABASE_URL!) : await embeddedInstallation();
  const servers: Fixture['servers'] = [];
  const close = async () => {
    for (const server of servers) await endRoster(server.roster);
    await installation.remove();
  };
  try {
    const added = await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'remembers what people tell it'], installation.env);
    if (added.code !== 0) throw new Error(`roster agent add failed: ${added.stderr}`);
    for (let index = 0; index < processes; index += 1) servers.push(await startListening(installation.env));
    const database = await installation.openDatabase();
    const directory = createDirectory(database);
    let people = 0;
    return {
      installation,
      servers,
      async speaker(index) {
        const person = await directory.addPerson({ name: `Person ${(people += 1)}` });
        const address = servers[index % servers.length]!.address;
        return { address, ...(await signIn(database, address, person.id)) };
      },
      async close() {
        await database.close();
        await close();
      },
    };
  } catch (error) {
    await close();
    throw error;
  }
}

async function measure(fixture: Fixture, kind: Kind, processes: number, concurrency: number, options: Options): Promise<RowResult> {
  const perConversation = Math.max(2, Math.ceil(options.turns / concurrency));
  const vocabulary = createVocabulary(seed);
  // Each conversation a new person's, signed in on its server before the clock starts.
  const speakers: Speaker[] = [];
  for (let index = 0; index < concurrency; index += 1) speakers.push(await fixture.speaker(index));
  const turns: number[] = [];
  const cores = countCores(fixture.installation, fixture.servers.map((server) => server.roster.child.pid!));
  const started = performance.now();
  await Promise.all(
    speakers.map(async (speaker, conversation) => {
      const random = createRandom(seed + concurrency * 1_000 + conversation);
      const known: string[] = [];
      for (let turn = 0; turn < perConversation; turn += 1) {
        const text = messageFor(random, vocabulary, known, `c${conversation} t${turn}`, turn);
        const before = performance.now();
        await chat(speaker.address, speaker, { agent: 'Scout', message: text });
        turns.push(performance.now() - before);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { kind, processes, concurrency, turns, seconds, cores: cores() };
}

export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  const options = parseOptions(args);
  const serverUrl = process.env.TEST_DATABASE_URL;
  const kinds: Kind[] = serverUrl !== undefined && serverUrl !== '' ? ['server', 'embedded'] : ['embedded'];
  if (!kinds.includes('server')) progress('scale: TEST_DATABASE_URL is not set; the server Postgres table is skipped');
  await makeClusterTemplate();
  const results: RowResult[] = [];
  for (const kind of kinds) {
    for (const processes of options.processes) {
      progress(`scale ${kind}: ${processes} roster start on a new installation`);
      const fixture = await openFixture(kind, processes);
      try {
        for (let server = 0; server < processes; server += 1) {
          const speaker = await fixture.speaker(server);
          for (let turn = 0; turn < warmUpTurns; turn += 1) await chat(speaker.address, speaker, { agent: 'Scout', message: `warming up, turn ${turn}` });
        }
        for (const concurrency of options.concurrency) {
          const result = await measure(fixture, kind, processes, concurrency, options);
          results.push(result);
          progress(
            `scale ${kind}, ${processes} process${processes === 1 ? '' : 'es'}, ${concurrency} at once: ${result.turns.length} turns, ` +
              `p50 ${formatMs(percentile(result.turns, 50))} ms, ${(result.turns.length / result.seconds).toFixed(1)} turns/s`,
          );
        }
      } finally {
        await fixture.close();
      }
    }
  }
  return buildReport(results, options, kinds);
}

function buildReport(results: RowResult[], options: Options, kinds: Kind[]): BenchmarkReport {
  const rate = (result: RowResult) => result.turns.length / result.seconds;
  const cpuPerTurn = (result: RowResult) => (result.cores.machine * result.seconds * 1000) / result.turns.length;
  const alone = (result: RowResult) => results.find((other) => other.kind === result.kind && other.processes === 1 && other.concurrency === result.concurrency);
  const table = (kind: Kind): ResultTable => ({
    title:
      kind === 'server'
        ? 'Server Postgres (TEST_DATABASE_URL): POST /api/chat, one row per number of roster start and conversations at once'
        : 'Embedded database (one data folder, its host process serving every roster start): POST /api/chat, one row per number of roster start and conversations at once',
    columns: ['roster start', 'at once', 'turns', 'p50 ms', 'p95 ms', 'turns/s', 'turns/s against one process', 'machine CPU ms per turn', 'cores busy (machine)', 'cores: roster start', `cores: ${kind === 'server' ? 'Postgres' : 'the folder’s host'}`],
    rows: results
      .filter((result) => result.kind === kind)
      .map((result) => {
        const one = alone(result);
        return [
          String(result.processes),
          String(result.concurrency),
          String(result.turns.length),
          formatMs(percentile(result.turns, 50)),
          formatMs(percentile(result.turns, 95)),
          rate(result).toFixed(1),
          one === undefined ? '–' : `${(rate(result) / rate(one)).toFixed(2)}×`,
          formatMs(cpuPerTurn(result)),
          result.cores.machine.toFixed(2),
          result.cores.roster.toFixed(2),
          result.cores.database.toFixed(2),
        ];
      }),
  });
  const findings: string[] = [];
  const cores = os.cpus().length;
  for (const kind of kinds) {
    const pairs = results
      .filter((result) => result.kind === kind && result.processes === 2)
      .flatMap((two) => {
        const one = alone(two);
        return one === undefined ? [] : [{ one, two }];
      });
    if (pairs.length === 0) continue;
    const gains = pairs.map(
      ({ one, two }) =>
        `${(rate(two) / rate(one)).toFixed(2)}× at ${two.concurrency} at once (${rate(one).toFixed(1)} → ${rate(two).toFixed(1)} turns/s, ` +
        `p50 ${formatMs(percentile(one.turns, 50))} → ${formatMs(percentile(two.turns, 50))} ms, the machine's CPU per turn ${formatMs(cpuPerTurn(one))} → ${formatMs(cpuPerTurn(two))} ms)`,
    );
    const busy = Math.min(...pairs.map(({ one }) => one.cores.machine));
    const bound =
      busy >= 0.8 * cores
        ? ` With one process this machine's ${cores} cores were already at least ${busy.toFixed(2)} busy in every row: a second process had no idle core to run on, only the same cores to share.`
        : '';
    findings.push(`**Two processes against one, ${kind === 'server' ? 'server Postgres' : 'embedded database'}:** ${gains.join('; ')}.${bound}`);
  }
  if (!kinds.includes('server')) findings.push('Server Postgres: skipped (TEST_DATABASE_URL is not set).');
  return {
    notes: [
      `One agent, Scout, on the offline engine. Each configuration (database, number of \`roster start\`) is an installation of ` +
        `its own: a new database (on the server, \`roster_test_…\` created and dropped; embedded, a new data folder), the machine's ` +
        `Redis with a ROSTER_QUEUE_PREFIX of its own, \`roster agent add\`, then the processes started one after another on free ` +
        `ports with the same DATABASE_URL (or ROSTER_DATA_DIR), REDIS_URL and prefix. Each \`roster start\` is a server, a worker ` +
        `and a gateway: its worker relays and runs the jobs the turns queue (extract after every turn) while the turns go on, as ` +
        `in production. Each process first answers ${warmUpTurns} warm-up turns of a person of its own.`,
      `Each row has *at once* conversations, each a new person's (added and given a login link in the database, signed in with ` +
        `\`POST /api/login\` on that conversation's server before the clock starts), spread over the servers round robin ` +
        `(conversation i to server i mod the number of servers). A conversation says at least ${options.turns} / *at once* ` +
        `turns (at least 2) one after another through \`POST /api/chat\` (a new connection per request, the whole event stream ` +
        `read): a quarter \`remember that …\` (a fact of its own), a quarter \`what do you know about …\` one of them, half plain ` +
        `talk about one. *p50* and *p95* are a turn's time from the request to the end of its stream; *turns/s* is the row's ` +
        `turns over its wall time. *cores* are CPU seconds over the row's wall time, read from /proc: the whole machine's busy ` +
        `time (this benchmark's client, Redis and anything else running included), the \`roster start\` processes', and the ` +
        `database's (on the server every postgres process of the machine; embedded, the folder's host process); *machine CPU ms ` +
        `per turn* is the machine's busy time over the row divided by its turns.`,
      `The benchmark, the processes, Postgres and Redis share this machine's cores: a second process adds throughput only as ` +
        `far as the cores one process leaves idle allow. On the embedded database both processes are clients of the one host ` +
        `process that holds the folder (PGlite, one statement at a time), so a second process cannot add database throughput there.`,
    ],
    tables: kinds.map(table),
    findings,
  };
}
