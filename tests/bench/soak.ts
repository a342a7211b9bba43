/**
 * A soak on the embedded database: many turns through `core.handle` over
 * 100 conversations on a data folder (the product's path: the database
 * served by its host process over the folder's socket), with the worker's
 * vacuum job run as its schedule would, beside the same turns with no vacuum
 * at all, in the same run. Every 1,000 turns: the folder's size on disk, the
 * bytes per turn since the last sample, and the resident memory of this
 * process (the core) and of the database's host.
 *
 * What a turn stores (the message, the reply, a fact for a quarter of them,
 * the jobs it queues) is content: the folder grows with it for ever. What
 * must not grow is the rest: the bytes per turn after warm-up, and resident
 * memory.
 *
 * Options: `--turns=10000` per arm, `--conversations=100`, `--vacuum-every=1000` (turns).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import type { Person } from '@roster/core';
import { migrate, openEmbeddedDatabase } from '@roster/db';
import { handlers } from '@roster/jobs';
import { createRuntime } from '@roster/runtime';
import { progress, type BenchmarkReport, type ResultTable } from './report.js';
import { createFact, createRandom, createVocabulary, paraphrase } from './synthetic.js';

export const title = 'Soak: folder size and resident memory over many turns, with and without the vacuum job';

const seed = 20_261_201;
const sampleEvery = 1_000;

interface Options {
  turns: number;
  conversations: number;
  vacuumEvery: number;
}

function parseOptions(args: readonly string[]): Options {
  const options: Options = { turns: 10_000, conversations: 100, vacuumEvery: 1_000 };
  for (const arg of args) {
    const [key, value = ''] = arg.replace(/^--/, '').split('=');
    const n = Number.parseInt(value.replace(/k$/i, '000'), 10);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${arg}: a positive integer, please.`);
    if (key === 'turns') options.turns = n;
    else if (key === 'conversations') options.conversations = n;
    else if (key === 'vacuum-every') options.vacuumEvery = n;
    else throw new Error(`Unknown option ${arg}: soak takes --turns=10000, --conversations=100 and --vacuum-every=1000.`);
  }
  return options;
}

interface Sample {
  turns: number;
  folderBytes: number;
  coreRss: number;
  hostRss: number;
  seconds: number;
}

function folderBytes(dir: string): number {
  let total = 0;
  for (const name of fs.readdirSync(dir, { recursive: true }) as string[]) {
    try {
      const stat = fs.statSync(path.join(dir, name));
      if (stat.isFile()) total += stat.size;
    } catch {
      // Removed since the listing (a WAL segment).
    }
  }
  return total;
}

/** Resident memory of a process, from /proc. */
function rssOf(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const line = fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((entry) => entry.startsWith('VmRSS:'));
    return Number.parseInt(line?.split(/\s+/)[1] ?? '', 10) * 1024;
  } catch {
    return Number.NaN;
  }
}

function hostPid(dir: string): number | undefined {
  try {
    const pid = Number.parseInt(fs.readFileSync(path.join(dir, 'roster.lock'), 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

async function soak(options: Options, vacuum: boolean): Promise<Sample[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-soak-'));
  const folder = path.join(dir, 'pglite');
  const database = await openEmbeddedDatabase(folder);
  try {
    await migrate(database);
    const runtime = await createRuntime({ config: parseConfig({ LOG_LEVEL: 'silent' }), database, key: testInstallationKey });
    const { core } = runtime;
    await core.directory.addAgent({ name: 'Scout', job: 'remembers what people tell it' });
    const people: Person[] = [];
    for (let index = 0; index < options.conversations; index += 1) people.push(await core.directory.addPerson({ name: `Soak Person ${index}` }));
    const deps = { database, memory: runtime.memory, directory: core.directory, engineFor: runtime.engineFor, judgeFor: runtime.judgeFor };
    const vocabulary = createVocabulary(seed);
    const random = createRandom(seed);
    const known: string[][] = people.map(() => []);
    const samples: Sample[] = [];
    const started = performance.now();
    const sample = (turns: number) => {
      samples.push({ turns, folderBytes: folderBytes(folder), coreRss: process.memoryUsage().rss, hostRss: rssOf(hostPid(folder)), seconds: (performance.now() - started) / 1000 });
    };
    sample(0);
    for (let turn = 1; turn <= options.turns; turn += 1) {
      const index = turn % people.length;
      const person = people[index]!;
      const mine = known[index]!;
      let text: string;
      if (turn % 4 === 0 || mine.length === 0) {
        const fact = createFact(random, vocabulary).replace(/\.$/, '');
        mine.push(fact);
        text = `remember that ${fact}`;
      } else if (turn % 4 === 1) text = `what do you know about ${paraphrase(random, mine[Math.floor(random() * mine.length)]!)}?`;
      else text = `${paraphrase(random, mine[Math.floor(random() * mine.length)]!)} (turn ${turn})`;
      await core.handle({ channel: 'web', conversation: { externalId: `soak:${person.id}`, kind: 'dm' }, sender: { personId: person.id }, text }, { agent: 'Scout' });
      if (vacuum && turn % options.vacuumEvery === 0) await handlers.vacuum(deps, {}, { progress: async () => {} });
      if (turn % sampleEvery === 0 || turn === options.turns) {
        sample(turn);
        progress(`soak ${vacuum ? 'with' : 'without'} vacuum: ${turn} turns, ${(samples.at(-1)!.folderBytes / 1e6).toFixed(1)} MB`);
      }
    }
    return samples;
  } finally {
    await database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const mb = (bytes: number) => (Number.isNaN(bytes) ? '–' : (bytes / (1024 * 1024)).toFixed(1));

export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  const options = parseOptions(args);
  const withVacuum = await soak(options, true);
  const without = await soak(options, false);
  const table: ResultTable = {
    title: `${options.turns.toLocaleString('en')} turns over ${options.conversations} conversations, embedded database; vacuum every ${options.vacuumEvery.toLocaleString('en')} turns beside none`,
    columns: ['turns', 'folder MB (vacuum)', 'folder MB (none)', 'KB per turn since last (vacuum)', 'KB per turn since last (none)', 'core RSS MB (vacuum)', 'host RSS MB (vacuum)', 'core RSS MB (none)', 'host RSS MB (none)'],
    rows: withVacuum.map((sample, index) => {
      const other = without[index]!;
      const perTurn = (samples: Sample[]) => (index === 0 ? '–' : ((samples[index]!.folderBytes - samples[index - 1]!.folderBytes) / (samples[index]!.turns - samples[index - 1]!.turns) / 1024).toFixed(1));
      return [sample.turns.toLocaleString('en'), mb(sample.folderBytes), mb(other.folderBytes), perTurn(withVacuum), perTurn(without), mb(sample.coreRss), mb(sample.hostRss), mb(other.coreRss), mb(other.hostRss)];
    }),
  };
  const last = withVacuum.at(-1)!;
  const warm = withVacuum[Math.min(2, withVacuum.length - 1)]!;
  const growth = (key: 'coreRss' | 'hostRss') => ((last[key] - warm[key]) / warm[key]) * 100;
  return {
    notes: [
      'Each turn goes through `core.handle` with the offline engine: a quarter say "remember that …" (a fact stored), a quarter ask about a fact of theirs, half talk about one. The database is a data folder served by its host process, as `roster start` runs it; the vacuum arm runs the worker\'s `vacuum` job handler every so many turns, as its schedule would.',
      'A turn stores its message, its reply and the jobs it queues (no worker runs here, so the outbox keeps them all): the folder grows with that content. The bytes per turn after warm-up, and resident memory, are what must stay flat.',
    ],
    tables: [table],
    findings: [
      `With vacuum, from ${warm.turns.toLocaleString('en')} to ${last.turns.toLocaleString('en')} turns: core RSS ${growth('coreRss') >= 0 ? '+' : ''}${growth('coreRss').toFixed(0)} %, host RSS ${growth('hostRss') >= 0 ? '+' : ''}${growth('hostRss').toFixed(0)} %; folder ${mb(last.folderBytes)} MB against ${mb(without.at(-1)!.folderBytes)} MB without vacuum. ${(last.turns / last.seconds).toFixed(0)} turns/s on one conversation at a time.`,
    ],
  };
}
