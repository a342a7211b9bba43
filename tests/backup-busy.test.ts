import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readBackupHeader } from './support/backup-file.js';
import { startFakeOpenAi } from './support/fake-openai.js';
import { dropQueueKeys, embeddedInstallation } from './support/installation.js';
import { endRoster, runRoster, startListening, tempDataDir, type RunResult } from './support/roster-process.js';

/**
 * A backup taken while twenty turns run through the HTTP API of a running
 * `roster start`, restored into a new folder: the built CLI, real HTTP, the
 * machine's Redis, and a local server that answers like the OpenAI API as
 * the agent's model (the far side of the network), which the test holds so
 * that turns are under way when the backup begins, wherever the machine's
 * clock stands: it answers four turns at once; every later turn waits after
 * its remember call, half of them until the backup command starts, half
 * until it ends. What a crash-consistent image promises: every turn
 * acknowledged before the backup began is in it, every fact written before
 * it began too, each with the person's message it came from, and nothing
 * the installation does not hold.
 */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A start, ten sign-ins and twenty turns beside a backup, then a restore and its reads, each booting Node and the embedded database, on a busy machine. */
const processes = 900_000;
/** Two turns of one person stream at once at most (the server answers 429 past that): ten people, two turns each, all twenty at once. */
const people = Array.from({ length: 10 }, (_, index) => `p${String(index + 1).padStart(2, '0')}`);
/** Turns the model answers at once: those acknowledged before the backup begins. */
const answeredAtOnce = 4;

interface Turn {
  person: string;
  locker: number;
  /** The fact its remember call wrote, from the turn-end event. */
  factId?: string;
  /** Its stream ended with the reply. */
  acknowledged: boolean;
  /** Whether that was before the backup command was started. */
  beforeBackup?: boolean;
  /** Its reply was held after its fact was written, until the backup command started or until it ended. */
  held?: 'start' | 'end';
}
interface Session {
  cookie: string;
  csrfToken: string;
}
interface ListedFact {
  id: string;
  content: string;
}
interface PersonExport {
  facts: Array<{ versions: Array<{ id: string; provenance: { sourceMessageIds: string[] } }> }>;
  messages: Array<{ id: string; role: string; content: string | null }>;
}

const said = (turn: Turn) => `remember that locker ${turn.locker} holds parcel ${turn.locker * 7 + 100}`;
const fact = (turn: Turn) => `locker ${turn.locker} holds parcel ${turn.locker * 7 + 100}`;
const reply = (turn: Turn) => `Noted: ${fact(turn)}`;

/** A promise the test resolves when it chooses. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** The events of a text/event-stream body, in order. */
const streamEvents = (body: string) =>
  body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      return { event: lines.find((line) => line.startsWith('event: '))?.slice('event: '.length), data: JSON.parse(lines.find((line) => line.startsWith('data: '))!.slice('data: '.length)) };
    });

describe('a backup taken while twenty turns run', () => {
  it('holds every turn acknowledged before it began and every fact written before it, each with its message, nothing the installation lacks; its head verifies, doctor --deep passes, and a fact forgotten after it stays forgotten with --replay-forgets-from', async () => {
    const key = randomBytes(32).toString('hex');
    const installation = await embeddedInstallation();
    cleanups.push(() => installation.remove());
    const dataDir = installation.env.ROSTER_DATA_DIR!;
    const env = {
      ...installation.env,
      ROSTER_SECRET_KEY: key,
      // The nightly jobs at an hour far from now: only what the turns queue runs beside the backup.
      ROSTER_TIMEZONE: 'UTC',
      ROSTER_NIGHTLY_HOUR: String((new Date().getUTCHours() + 12) % 24),
    };
    const roster = async (environment: Record<string, string>, ...args: string[]) => {
      const result = await runRoster(args, environment, processes);
      expect(result.code, `roster ${args.join(' ')}\n${result.stdout}\n${result.stderr}`).toBe(0);
      return result.stdout.trim();
    };

    // Two turns for each person, all twenty sent at once.
    const turns: Turn[] = Array.from({ length: 20 }, (_, index) => ({ person: people[index % people.length]!, locker: index + 1, acknowledged: false }));
    const file = path.join(dataDir, 'busy.backup');
    let backup: Promise<RunResult> | undefined;
    const backupStarted = gate();
    const backupEnded = gate();
    /** The backup command starts once the turns answered at once are acknowledged and every person with a turn left has one waiting after its fact. */
    const backupWhenReady = () => {
      if (backup !== undefined || turns.filter((turn) => turn.acknowledged).length < answeredAtOnce) return;
      const busy = new Set(turns.filter((turn) => !turn.acknowledged).map((turn) => turn.person));
      if (turns.filter((turn) => turn.held !== undefined).length < busy.size) return;
      backup = runRoster(['backup', '--out', file, '--json'], env, processes);
      backupStarted.open();
      void backup.finally(backupEnded.open);
    };
    let atOnce = 0;
    let heldSoFar = 0;
    const model = await startFakeOpenAi(async (request) => {
      const turn = request.tools.includes('remember') ? turns.find((candidate) => request.parts.some((part) => part.text === said(candidate))) : undefined;
      // Anything else a worker may ask (an extraction of idle conversations): nothing found.
      if (turn === undefined) return { text: '[]' };
      if (request.toolResults.length === 0) return { tool: 'remember', input: { content: fact(turn) } };
      if (backup === undefined && atOnce < answeredAtOnce) atOnce += 1;
      else if (backup === undefined) {
        turn.held = heldSoFar % 2 === 0 ? 'start' : 'end';
        heldSoFar += 1;
        backupWhenReady();
        await (turn.held === 'start' ? backupStarted : backupEnded).opened;
      }
      return { text: reply(turn) };
    });
    cleanups.push(() => model.close());

    const { roster: running, address } = await startListening(env);
    cleanups.push(() => endRoster(running));
    // A failed test lets the turns it held finish, so that roster start stops without waiting on them.
    cleanups.push(() => {
      backupStarted.open();
      backupEnded.open();
    });
    const [, ownerLink] = await running.waitForOutput(/Made the first owner, "owner"\. .*?: (\S+)/);
    const signIn = async (link: string): Promise<Session> => {
      const login = await fetch(`${address}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: new URL(link).hash.slice(1) }) });
      expect(login.status).toBe(200);
      return { cookie: login.headers.get('set-cookie')!.split(';')[0]!, csrfToken: ((await login.json()) as { csrfToken: string }).csrfToken };
    };
    const api = async (as: Session, method: string, route: string, body?: unknown) => {
      const response = await fetch(`${address}${route}`, {
        method,
        headers: { cookie: as.cookie, 'x-csrf-token': as.csrfToken, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      expect(response.ok, `${method} ${route}: ${response.status} ${text}`).toBe(true);
      return text;
    };
    const owner = await signIn(ownerLink!);
    await api(owner, 'POST', '/api/agents', { name: 'Scout', job: 'keeps the lockers', engine: model.engine });
    for (const name of people) await api(owner, 'POST', '/api/people', { name });
    const sessions = new Map(await Promise.all(people.map(async (name) => [name, await signIn(await roster(env, 'login-link', '--as', name))] as const)));

    const answered = async (turn: Turn) => {
      const events = streamEvents(await api(sessions.get(turn.person)!, 'POST', '/api/chat', { agent: 'Scout', message: said(turn) }));
      turn.acknowledged = true;
      turn.beforeBackup = backup === undefined;
      backupWhenReady();
      expect(events.map((part) => part.event)).toEqual(['text-delta', 'turn-end', 'done']);
      expect(events[1]!.data.text).toBe(reply(turn));
      turn.factId = events[1]!.data.toolCalls[0].output.factId;
      expect(turn.factId).toMatch(/^[0-9a-f-]{36}$/);
    };
    await Promise.all(turns.map(answered));
    const taken = await backup!;
    expect(taken.code, taken.stderr).toBe(0);
    const before = turns.filter((turn) => turn.beforeBackup === true);
    expect(before).toHaveLength(answeredAtOnce);
    // Facts written before the backup began: those of the turns acknowledged, and of those held after their remember call.
    const written = turns.filter((turn) => turn.beforeBackup === true || turn.held !== undefined);
    expect(turns.filter((turn) => turn.held === 'end').length).toBeGreaterThan(0);

    // The positive control: the running installation holds all twenty, each about its person.
    const memoryOf = async (): Promise<Map<string, string>> => {
      const { groups } = JSON.parse(await api(owner, 'GET', '/api/agents/Scout/memory')) as { groups: Array<{ person: { name: string } | null; facts: ListedFact[] }> };
      return new Map(groups.flatMap((group) => group.facts.map((listed) => [listed.id, `${group.person?.name ?? '-'}: ${listed.content}`] as const)));
    };
    const live = await memoryOf();
    for (const turn of turns) expect(live.get(turn.factId!)).toBe(`${turn.person}: ${fact(turn)}`);

    // After the backup, the first fact acknowledged before it is forgotten on the running installation.
    const forgotten = before[0]!;
    await api(owner, 'POST', `/api/agents/Scout/facts/${forgotten.factId!}/forget`);
    const kept = await memoryOf();
    expect(kept.has(forgotten.factId!)).toBe(false);

    const header = readBackupHeader(file);
    expect(JSON.parse(taken.stdout)).toMatchObject({ file, sealed: true, heads: header.heads });
    expect(header.heads.map((head) => head.agent)).toEqual(['Scout']);

    const target = tempDataDir({ fresh: true });
    cleanups.push(() => fs.rmSync(target, { recursive: true, force: true }));
    const restoredPrefix = `${installation.prefix}-restored`;
    cleanups.push(() => dropQueueKeys(restoredPrefix));
    const restoredEnv = { ROSTER_DATA_DIR: target, ROSTER_SECRET_KEY: key, REDIS_URL: installation.redisUrl, ROSTER_QUEUE_PREFIX: restoredPrefix };
    expect(await roster(restoredEnv, 'restore', file, '--replay-forgets-from', dataDir)).toContain('1 tombstone newer than the backup, 1 fact forgotten again');

    // Reads of the restored folder, at once: its facts, each person's words, the audit chain against the backup's head, every row.
    const [listing, verified, doctor, ...exports] = await Promise.all([
      roster(restoredEnv, 'memory', 'list', '--agent', 'Scout', '--json'),
      runRoster(['audit', 'verify', '--agent', 'Scout', '--expect', header.heads[0]!.head], restoredEnv, processes),
      runRoster(['doctor', '--deep'], restoredEnv, processes),
      ...people.map((name) => roster(restoredEnv, 'person', 'export', name)),
    ]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/^Scout\s+ok\s+/);
    expect(doctor.code, doctor.stdout).toBe(0);
    expect(doctor.stdout).toMatch(/^pages\s+ok/m);

    const restored = new Map(
      (JSON.parse(listing) as { people: Array<{ person: string; facts: ListedFact[] }> }).people.flatMap((group) => group.facts.map((listed) => [listed.id, `${group.person}: ${listed.content}`] as const)),
    );
    // Every fact written before the backup began is there (those acknowledged among them), but the one forgotten since.
    for (const turn of written) expect(restored.get(turn.factId!), said(turn)).toBe(turn === forgotten ? undefined : `${turn.person}: ${fact(turn)}`);
    expect(restored.size).toBeGreaterThanOrEqual(before.length - 1);
    // Nothing the installation does not hold: each restored fact is a turn's, and one it lists now, with the same words about the same person.
    for (const [id, content] of restored) {
      expect(turns.map((turn) => turn.factId)).toContain(id);
      expect(kept.get(id), id).toBe(content);
    }

    // Each restored fact is whole: the person's message it came from is there; a turn acknowledged before the backup has its reply, one held until it ended has none.
    const exported = new Map(people.map((name, index) => [name, JSON.parse(exports[index]!) as PersonExport]));
    for (const turn of turns.filter((candidate) => restored.has(candidate.factId!))) {
      const { facts, messages } = exported.get(turn.person)!;
      const version = facts.flatMap((candidate) => candidate.versions).find((candidate) => candidate.id === turn.factId)!;
      expect(version.provenance.sourceMessageIds).toHaveLength(1);
      expect(messages.find((message) => message.id === version.provenance.sourceMessageIds[0])).toMatchObject({ role: 'person', content: said(turn) });
      const replied = messages.some((message) => message.role === 'agent' && message.content === reply(turn));
      if (turn.beforeBackup === true) expect(replied, said(turn)).toBe(true);
      if (turn.held === 'end') expect(replied, said(turn)).toBe(false);
    }
    const count = (which: Turn['held']) => turns.filter((turn) => turn.held === which).length;
    console.info(
      `backup beside 20 turns: ${before.length} acknowledged before it began, ${count('start')} held until it started and ${count('end')} until it ended after their facts, ` +
        `${turns.length - written.length} not that far; ${restored.size + 1} of the 20 facts in it (1 forgotten again on restore)`,
    );
  }, processes);
});
