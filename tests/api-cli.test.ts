import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';

/** Signing in to the web page from the command line: the built CLI, a running roster start, real HTTP. */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function login(address: string, link: string): Promise<{ status: number; body: any }> {
  const token = new URL(link).hash.slice(1);
  const response = await fetch(`${address}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
  return { status: response.status, body: await response.json() };
}

describe('roster login-link', () => {
  it('prints a link whose token signs the person in once; the first start makes the owner and prints one', async () => {
    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    const env = { ROSTER_DATA_DIR: dir, PORT: String(port) };
    const roster: RunningRoster = startRoster(['start'], { ...env, HOST: '0.0.0.0' });
    cleanups.push(async () => void (await roster.stop()));
    await roster.waitForOutput(/running at/);
    const [, first] = (await roster.waitForOutput(/Made the first owner, "owner"\. Sign in within 15 minutes \(the link works once\): (\S+)/)) as RegExpMatchArray;
    // Listening beyond loopback without a trusted proxy: said at start.
    expect(roster.output().stderr).toContain('Warning: HOST=0.0.0.0 listens beyond this machine over plain HTTP');
    expect(first).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/login#[A-Za-z0-9_-]{43}$`));
    const address = `http://127.0.0.1:${port}`;
    expect(await login(address, first!)).toMatchObject({ status: 200, body: { person: { name: 'owner', role: 'owner' } } });
    expect(await login(address, first!)).toMatchObject({ status: 401, body: { error: { code: 'login_link_invalid' } } });

    // Beside the running server, through its database socket.
    const printed = await runRoster(['login-link'], env);
    expect(printed.code, printed.stderr).toBe(0);
    const link = printed.stdout.trim();
    expect(link).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/login#[A-Za-z0-9_-]{43}$`));
    // Local time with its zone (the test's TZ is unset: the machine's), as the page shows it.
    expect(printed.stderr).toMatch(/Signs owner \(owner\) in once, until \w{3} \d{1,2}, \d{4}, \d{1,2}:\d\d:\d\d [AP]M [A-Z][A-Za-z0-9+:-]+\. Keep it to yourself\./);
    const signedIn = await login(address, link);
    expect(signedIn).toMatchObject({ status: 200, body: { person: { name: 'owner', role: 'owner' }, csrfToken: expect.any(String) } });
    expect(await login(address, link)).toMatchObject({ status: 401 });

    expect((await runRoster(['person', 'add', 'Bob'], env)).code).toBe(0);
    const bobs = await runRoster(['login-link', '--as', 'Bob'], env);
    expect(bobs.code).toBe(0);
    expect(await login(address, bobs.stdout.trim())).toMatchObject({ status: 200, body: { person: { name: 'Bob', role: 'member' } } });

    const nobody = await runRoster(['login-link', '--as', 'Nobody'], env);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr.trim().split('\n').filter((line) => !line.startsWith('{'))).toEqual(['roster login-link: No person named "Nobody". roster person add Nobody adds one.']);
    expect((await runRoster(['login-link', 'Bob'], env)).code).toBe(2);

    // A later start has its owner: no new link, a hint instead.
    expect(await roster.stop()).toBe(0);
    const again = startRoster(['start'], env);
    cleanups.push(async () => void (await again.stop()));
    await again.waitForOutput(/Sign in with a link from roster login-link\./);
    expect(again.output().stdout).not.toContain('/login#');
    expect(again.output().stderr).not.toContain('Warning: HOST');
  }, 240_000);
});
