import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runRoster, signInThrough, startListening, tempDataDir, type RunningRoster } from './support/roster-process.js';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function start(env: Record<string, string>): Promise<{ roster: RunningRoster; address: string }> {
  const started = await startListening(env);
  cleanups.push(async () => {
    if (started.roster.child.exitCode === null && started.roster.child.signalCode === null) started.roster.child.kill('SIGKILL');
  });
  return started;
}

describe('roster start killed (kill -9) during a burst of turns', () => {
  it('opens cleanly again with every acknowledged turn there, its reply and its memory, and the audit chain intact', async () => {
    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const env = { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`, REDIS_URL: redisUrl };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    const first = await start(env);
    await first.roster.waitForOutput(/Made the first owner/);
    const session = await signInThrough(first.address, env);

    // Two streams at a time, for as long as the process lives; a turn counts as acknowledged when its done event arrived.
    const acknowledged: number[] = [];
    let next = 0;
    let killed = false;
    const stream = async () => {
      while (!killed) {
        const n = (next += 1);
        try {
          const response = await fetch(`${first.address}/api/chat`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', cookie: session.cookie, 'x-csrf-token': session.csrfToken },
            body: JSON.stringify({ agent: 'Scout', message: `remember that locker ${n} holds parcel ${n * 7}`, id: randomUUID() }),
          });
          if ((await response.text()).includes('event: done')) acknowledged.push(n);
        } catch {
          // Cut off by the kill: not acknowledged.
        }
      }
    };
    const streams = [stream(), stream()];
    while (acknowledged.length < 6) await new Promise((resolve) => setTimeout(resolve, 20));
    killed = true;
    first.roster.child.kill('SIGKILL');
    await Promise.all(streams);
    expect(acknowledged.length).toBeGreaterThanOrEqual(6);

    // The next start opens the folder cleanly: no stale lock or socket stops it.
    const second = await start(env);
    const again = await signInThrough(second.address, env);
    const history = (await (await fetch(`${second.address}/api/chat/history?limit=500`, { headers: { cookie: again.cookie } })).json()) as { messages: Array<{ role: string; text: string }> };
    const memory = (await runRoster(['memory', 'list', '--agent', 'Scout', '--person', 'owner', '--json'], env)).stdout;
    const facts = (JSON.parse(memory) as Array<{ content: string }>).map((fact) => fact.content);
    for (const n of acknowledged) {
      const said = `remember that locker ${n} holds parcel ${n * 7}`;
      const at = history.messages.findIndex((line) => line.role === 'person' && line.text === said);
      expect(at, said).toBeGreaterThanOrEqual(0);
      // Its reply right after it, and the fact it kept.
      expect(history.messages[at + 1], said).toMatchObject({ role: 'agent', text: `Noted: locker ${n} holds parcel ${n * 7}` });
      expect(facts).toContain(`locker ${n} holds parcel ${n * 7}`);
    }
    const verified = await runRoster(['audit', 'verify', '--json'], env);
    expect(verified.code, verified.stderr).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true });
    expect(fs.existsSync(path.join(dir, 'pglite'))).toBe(true);
    expect(await second.roster.stop()).toBe(0);
  });
});
