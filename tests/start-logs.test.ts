import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, runRoster, startRoster, tempDataDir } from './support/roster-process.js';

/** roster start's log lines: short ones for a person at a terminal, JSON for a machine; requests at debug; the sign-in link apart. */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function started(env: Record<string, string>) {
  const port = await freePort();
  const roster = startRoster(['start'], { ...env, PORT: String(port), REDIS_URL: redisUrl, ROSTER_QUEUE_PREFIX: `test-${randomUUID()}` });
  cleanups.push(async () => void (await roster.stop()));
  await roster.waitForOutput(/running at/);
  return { roster, address: `http://127.0.0.1:${port}` };
}

describe('roster start logs', () => {
  it('writes short lines in the terminal form (requests at debug only), JSON otherwise, and sets the sign-in link apart', async () => {
    const [dir, other] = [tempDataDir(), tempDataDir()];
    cleanups.push(() => [dir, other].forEach((folder) => fs.rmSync(folder, { recursive: true, force: true })));

    // The terminal form (LOG_FORMAT=pretty, as on a terminal), at debug: each request one short line.
    const pretty = await started({ ROSTER_DATA_DIR: dir, LOG_FORMAT: 'pretty', LOG_LEVEL: 'debug' });
    await pretty.roster.waitForOutput(/Made the first owner/);
    expect((await fetch(`${pretty.address}/healthz`)).status).toBe(200);
    expect(await pretty.roster.stop()).toBe(0);
    const { stdout, stderr } = pretty.roster.output();
    // The link's line has a blank line before and after it.
    expect(stdout).toMatch(/\n\nMade the first owner, "owner"\. Sign in within 15 minutes \(the link works once\): http:\/\/\S+\/login#\S+\n\n/);
    const lines = stderr.split('\n').filter((line) => line !== '');
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.filter((line) => line.startsWith('{'))).toEqual([]);
    expect(lines.filter((line) => /^\d\d:\d\d:\d\d (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) /.test(line)).length).toBeGreaterThan(0);
    expect(lines).toContainEqual(expect.stringMatching(/^\d\d:\d\d:\d\d DEBUG server: request {2}reqId=\S+ method=GET url=\/healthz status=200 ms=\d+$/));
    expect(stderr).not.toMatch(/login#/);

    // Not a terminal, no LOG_FORMAT: JSON, one object a line; at info no request is logged.
    const plain = await started({ ROSTER_DATA_DIR: other, LOG_LEVEL: 'info' });
    expect((await fetch(`${plain.address}/healthz`)).status).toBe(200);
    expect(await plain.roster.stop()).toBe(0);
    const json = plain.roster.output().stderr.split('\n').filter((line) => line !== '');
    expect(json.length).toBeGreaterThan(0);
    for (const line of json) expect(() => JSON.parse(line), line).not.toThrow();
    expect(json.map((line) => JSON.parse(line) as { msg?: string }).some((entry) => entry.msg === 'stopping')).toBe(true);
    expect(json.filter((line) => line.includes('/healthz'))).toEqual([]);

    // A format it does not know: said as any invalid variable is, exit 1, nothing run.
    const wrong = await runRoster(['agent', 'list'], { ROSTER_DATA_DIR: dir, LOG_FORMAT: 'fancy' });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr.trim()).toMatch(/^Invalid configuration:\n {2}LOG_FORMAT: the value "fancy" is not valid; expected json/);
  }, 300_000);
});
