import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { openEmbeddedDatabase } from '@roster/db';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAi, type FakeRequest } from './support/fake-openai.js';
import { isRunning, runRoster, startListening, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function killLater(running: RunningRoster): void {
  cleanups.push(async () => {
    running.child.stdin?.end();
    if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  });
}

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The process that holds the embedded database folder: the host every command is a client of. */
const hostOf = (dir: string) => Number(fs.readFileSync(path.join(dir, 'pglite', 'roster.lock'), 'utf8'));

/**
 * Whether bytes that `client` sent wait unread on a socket of `host`: a
 * statement sent to a host that is stopped. Read from the kernel's table of
 * Unix sockets (`ss`): the host's end of each connection names its peer.
 */
function statementWaiting(host: number, client: number): boolean {
  const rows = execFileSync('ss', ['-xapn'], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.trim().split(/\s+/));
  // Netid State Recv-Q Send-Q Local-address Local-inode Peer-address Peer-inode Process
  const ofClient = new Set(rows.filter((row) => row.at(-1)?.includes(`pid=${client},`) === true).map((row) => row[5]));
  return rows.some((row) => row.at(-1)?.includes(`pid=${host},`) === true && ofClient.has(row[7]) && Number(row[2]) > 0);
}

/** The person's and the agents' lines of the command line's conversations, oldest first, read as the database's owner. */
async function transcript(dir: string): Promise<Array<{ role: string; content: string }>> {
  const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
  try {
    return await database.adminScope('test: the cli transcript', async (tx) =>
      (
        await tx.query<{ role: string; content: string }>(
          `select m.role, m.content from messages m join conversations c on c.id = m.conversation_id where c.channel = 'cli' order by m.created_at, m.id`,
        )
      ).rows,
    );
  } finally {
    await database.close();
  }
}

describe('roster chat beside roster start when the embedded database host dies', () => {
  it('keeps the message once and answers it through a new host (the retry finds it by its id, unanswered), then the next line too', async () => {
    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    // The model holds its answer about the bike until the test lets it go: by then the message is stored.
    let letGo: () => void = () => {};
    const held = new Promise<void>((resolve) => (letGo = resolve));
    const lastWords = (request: FakeRequest) => request.parts.map((part) => String(part.text ?? '')).join('');
    const model = await startFakeOpenAi(async (request) => {
      if (lastWords(request) === 'the bike is green') await held;
      return { text: `Heard: ${lastWords(request)}` };
    });
    cleanups.push(() => model.close());
    const env = { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`, REDIS_URL: redisUrl };
    const added = await runRoster(['agent', 'add', '--name', 'A', '--job', 'keeps notes', '--engine', model.engine], env);
    expect(added.code, added.stderr).toBe(0);
    const server = await startListening(env);
    killLater(server.roster);

    const chat = startRoster(['chat', '--agent', 'A'], env, { input: true });
    killLater(chat);
    const say = (line: string) => chat.child.stdin!.write(`${line}\n`);
    say('the door is blue');
    await chat.waitForOutput(/^Heard: the door is blue$/m, 120_000);
    const host = hostOf(dir);
    // The host is a process of its own: neither the server nor the chat.
    expect([server.roster.child.pid, chat.child.pid]).not.toContain(host);
    const bannerOnly = chat.output().stderr;
    expect(bannerOnly.trim().split('\n')).toEqual(['Talking as owner to A. An empty line or Ctrl+D ends; Ctrl+C stops.']);

    // The bike's message is stored and its model is answering; the host stops, the chat's next statement waits on it, and the host dies.
    say('the bike is green');
    await until(() => model.requests.some((request) => lastWords(request) === 'the bike is green'), 'the model to be asked about the bike');
    process.kill(host, 'SIGSTOP');
    letGo();
    await until(() => statementWaiting(host, chat.child.pid!), 'the chat to send a statement to the stopped host');
    process.kill(host, 'SIGKILL');
    // The retry, through a new host, found the stored message by its id, without its answer: it is answered now.
    await chat.waitForOutput(/^Heard: the bike is green$/m, 120_000);
    // No word on standard error: no stack, no unhandled event.
    expect(chat.output().stderr).toBe(bannerOnly);
    expect(model.requests.filter((request) => lastWords(request) === 'the bike is green')).toHaveLength(2);

    // The session goes on through a new host, and so does the server.
    say('the lamp is red');
    await chat.waitForOutput(/^Heard: the lamp is red$/m, 120_000);
    expect(isRunning(host)).toBe(false);
    expect(hostOf(dir)).not.toBe(host);
    const healthz = await fetch(`${server.address}/healthz`);
    expect(healthz.status).toBe(200);
    const ended = new Promise((resolve) => chat.child.once('exit', resolve));
    chat.child.stdin!.end('\n');
    // No turn failed in this session.
    expect(await ended).toBe(0);

    // Each message once, each with its one answer.
    expect(await transcript(dir)).toEqual([
      { role: 'person', content: 'the door is blue' },
      { role: 'agent', content: 'Heard: the door is blue' },
      { role: 'person', content: 'the bike is green' },
      { role: 'agent', content: 'Heard: the bike is green' },
      { role: 'person', content: 'the lamp is red' },
      { role: 'agent', content: 'Heard: the lamp is red' },
    ]);
    expect(await server.roster.stop()).toBe(0);
  }, 240_000);
});
