import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isRunning, runRoster, signInThrough, startListening, tempDataDir, type RunningRoster } from './support/roster-process.js';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** The process that holds an embedded data folder: the one its lock file names. */
function folderHolder(dir: string): number {
  const lock = path.join(dir, 'pglite', 'roster.lock');
  const pid = Number.parseInt(fs.readFileSync(lock, 'utf8'), 10);
  if (!Number.isInteger(pid) || !isRunning(pid)) throw new Error(`${lock} names no running process`);
  return pid;
}

/** Exit code of a process asked to stop, or 'still running' once `ms` have passed. */
function exitWithin(roster: RunningRoster, ms: number): Promise<number | null | 'still running'> {
  return Promise.race([roster.stop(), new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), ms))]);
}

describe('roster start asked to stop while its database does not answer', () => {
  it('ends within 10 s, and the next start finds every acknowledged turn whole and the audit chain intact', async () => {
    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const env = { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`, REDIS_URL: redisUrl };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    const first = await startListening(env);
    cleanups.push(() => {
      if (first.roster.child.exitCode === null && first.roster.child.signalCode === null) first.roster.child.kill('SIGKILL');
    });
    await first.roster.waitForOutput(/Made the first owner/);
    const session = await signInThrough(first.address, env);
    const say = (words: string, signal?: AbortSignal) =>
      fetch(`${first.address}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie: session.cookie, 'x-csrf-token': session.csrfToken },
        body: JSON.stringify({ agent: 'Scout', message: words, id: randomUUID() }),
        ...(signal === undefined ? {} : { signal }),
      }).then((response) => response.text());

    // The positive control: while the database answers, a turn is answered and kept.
    expect(await say('remember that the archive opens at nine')).toContain('event: done');

    // The database stops answering (its host process is frozen, neither dead nor replying), with a turn in flight.
    const host = folderHolder(dir);
    process.kill(host, 'SIGSTOP');
    cleanups.push(() => {
      if (isRunning(host)) process.kill(host, 'SIGCONT');
    });
    const stuck = new AbortController();
    const inFlight = say('remember that the vault code is behind the clock', stuck.signal).catch((error: Error) => error.name);
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    expect(await exitWithin(first.roster, 10_000)).not.toBe('still running');
    stuck.abort();
    await inFlight;
    // The one line that says why it did not wait for the database, and no stack.
    expect(first.roster.output().stderr).not.toMatch(/\n\s+at /);

    // The database answers again; the next start opens the folder and finds the acknowledged turn whole.
    process.kill(host, 'SIGCONT');
    const second = await startListening(env);
    cleanups.push(() => {
      if (second.roster.child.exitCode === null && second.roster.child.signalCode === null) second.roster.child.kill('SIGKILL');
    });
    const again = await signInThrough(second.address, env);
    const history = (await (await fetch(`${second.address}/api/chat/history?limit=100`, { headers: { cookie: again.cookie } })).json()) as { messages: Array<{ role: string; text: string }> };
    const said = history.messages.findIndex((line) => line.role === 'person' && line.text === 'remember that the archive opens at nine');
    expect(said).toBeGreaterThanOrEqual(0);
    expect(history.messages[said + 1]).toMatchObject({ role: 'agent', text: 'Noted: the archive opens at nine' });
    // The turn cut off is whole or absent: never the words without the reply, nor a fact without its message.
    const cut = history.messages.findIndex((line) => line.role === 'person' && line.text === 'remember that the vault code is behind the clock');
    const facts = (JSON.parse((await runRoster(['memory', 'list', '--agent', 'Scout', '--person', 'owner', '--json'], env)).stdout) as Array<{ content: string }>).map((fact) => fact.content);
    expect(facts).toContain('the archive opens at nine');
    if (cut >= 0) {
      expect(history.messages[cut + 1]).toMatchObject({ role: 'agent', text: 'Noted: the vault code is behind the clock' });
      expect(facts).toContain('the vault code is behind the clock');
    } else {
      expect(facts).not.toContain('the vault code is behind the clock');
    }
    const verified = await runRoster(['audit', 'verify', '--json'], env);
    expect(verified.code, verified.stderr).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true });
    expect(await second.roster.stop()).toBe(0);
  });
});
