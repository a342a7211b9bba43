import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { hostname } from 'node:os';
import { until } from '@roster/channels/testing';
import { startFakeTelegram } from '@roster/channel-telegram/testing';
import { chromium } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, runRoster, signInThrough, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';
import { chromiumLaunch } from './support/web-roster.js';

/**
 * Who receives a bot account, as an operator asks it: `roster channel list`,
 * `roster doctor`, `/healthz` and the page's Channels screen. A real
 * `roster gateway` against the Telegram stand-in: receiving (by that process,
 * since when) while it runs; killed with -9, its lease lapses and every one
 * of them says nobody receives the bot, and why. Never "ok" for a bot nobody
 * receives.
 */

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

interface Account {
  account: string;
  state: string;
  holder: string | null;
  host: string | null;
  pid: number | null;
  since: string | null;
  detail: string;
}

describe('who receives a bot account', () => {
  it('says receiving (which process, since when) while a gateway runs, and failing, with why, once it was killed and its lease lapsed', { timeout: 300_000 }, async () => {
    const dir = tempDataDir();
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const fake = await startFakeTelegram();
    cleanups.push(() => fake.close());
    const env = { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`, TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_ROOT: fake.apiRoot };
    const telegramAccounts = async (): Promise<Account[]> => {
      const listed = await runRoster(['channel', 'list', '--json'], env);
      expect(listed.code, listed.stderr).toBe(0);
      return (JSON.parse(listed.stdout) as Array<{ channel: string; accounts: Account[] }>).find((entry) => entry.channel === 'telegram')!.accounts;
    };
    const health = async () => {
      const response = await fetch(`${address}/healthz`);
      return { status: response.status, body: (await response.json()) as { ok: boolean; channels: Array<{ channel: string; state: string; holder: string | null; detail: string }> } };
    };
    const doctorTelegram = async () => {
      const doctor = await runRoster(['doctor', '--json'], env);
      return { code: doctor.code, check: (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; status: string; detail: string }> }).checks.find((check) => check.name === 'telegram')! };
    };

    expect((await runRoster(['migrate'], env)).code).toBe(0);
    // The server first: it hosts the data folder, so the gateway can be killed without taking the database with it.
    const port = await freePort();
    const server: RunningRoster = startRoster(['server'], { ...env, PORT: String(port) });
    cleanups.push(() => server.stop());
    const [, address] = (await server.waitForOutput(/running at (http:\/\/\S+)/))!;

    // No gateway yet: configured, and nobody receives it.
    expect(await telegramAccounts()).toMatchObject([{ account: 'default', state: 'failing', holder: null, detail: expect.stringMatching(/^nobody receives it: no gateway has taken it yet/) }]);
    const before = await health();
    expect(before.status).toBe(503);
    expect(before.body).toMatchObject({ ok: false, writes: 'ok', redis: 'ok', channels: [{ channel: 'telegram', state: 'failing' }] });

    const gateway: RunningRoster = startRoster(['gateway'], { ...env, GATEWAY_PORT: String(await freePort()) });
    cleanups.push(() => gateway.stop());
    await gateway.waitForOutput(/gateway is running/);
    await until(() => fake.calls.includes('getUpdates'), 'the gateway to poll Telegram', 60_000);

    // Receiving, by that process (its host and pid), since it took the lease.
    const [receiving] = await telegramAccounts();
    expect(receiving).toMatchObject({ account: 'default', state: 'receiving', host: hostname(), pid: gateway.child.pid, since: expect.any(String) });
    expect(receiving!.detail).toBe(`received by ${receiving!.holder} since ${receiving!.since}`);
    expect(Date.parse(receiving!.since!)).toBeLessThanOrEqual(Date.now());
    const up = await health();
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ ok: true, channels: [{ channel: 'telegram', state: 'receiving', holder: receiving!.holder }] });
    expect((await doctorTelegram()).check).toMatchObject({ status: 'ok', detail: expect.stringContaining(`received by ${receiving!.holder}`) });

    // The page's Channels screen says the same, for the signed-in owner.
    const browser = await chromium.launch(chromiumLaunch);
    cleanups.push(() => browser.close());
    const { cookie } = await signInThrough(address!, env);
    const [name, value] = cookie.split('=') as [string, string];
    const context = await browser.newContext();
    await context.addCookies([{ name, value, url: address! }]);
    const page = await context.newPage();
    const accountOnPage = async () => {
      await page.goto(`${address}/channels`);
      const line = page.locator('li.card[data-channel="telegram"] ul.accounts li[data-account="default"]');
      await line.waitFor();
      return { state: await line.getAttribute('data-state'), text: await line.textContent() };
    };
    expect(await accountOnPage()).toMatchObject({ state: 'receiving', text: expect.stringContaining(`received by ${receiving!.holder}`) });

    // Killed outright: the lease stays until it lapses (15 s), then nobody receives the bot, and each says so.
    gateway.child.kill('SIGKILL');
    await until(async () => (await telegramAccounts())[0]?.state === 'failing', 'the killed gateway’s lease to lapse', 60_000);
    const [lapsed] = await telegramAccounts();
    expect(lapsed).toMatchObject({ state: 'failing', holder: receiving!.holder, since: null });
    expect(lapsed!.detail).toMatch(new RegExp(`^nobody receives it: ${escape(receiving!.holder!)} did, and its lease lapsed at \\S+ unrenewed`));
    const down = await health();
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ ok: false, writes: 'ok', redis: 'ok', channels: [{ channel: 'telegram', state: 'failing', detail: lapsed!.detail }] });
    const doctor = await doctorTelegram();
    expect(doctor.code).toBe(1);
    expect(doctor.check).toMatchObject({ status: 'fail', detail: expect.stringContaining(lapsed!.detail) });
    expect(await accountOnPage()).toMatchObject({ state: 'failing', text: expect.stringContaining('nobody receives it') });
    // No token in anything shown.
    for (const shown of [JSON.stringify(lapsed), JSON.stringify(down.body), doctor.check.detail, await page.content()]) expect(shown).not.toContain(fake.token);
  });
});

describe('a bot account whose channel failed', () => {
  it('is failing with the reason its holder gave when it let go: another poller took the bot’s updates', { timeout: 300_000 }, async () => {
    const dir = tempDataDir();
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const fake = await startFakeTelegram();
    cleanups.push(() => fake.close());
    const env = { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`, TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_ROOT: fake.apiRoot };
    const telegram = async (): Promise<Account> => {
      const listed = await runRoster(['channel', 'list', '--json'], env);
      expect(listed.code, listed.stderr).toBe(0);
      return (JSON.parse(listed.stdout) as Array<{ channel: string; accounts: Account[] }>).find((entry) => entry.channel === 'telegram')!.accounts[0]!;
    };
    expect((await runRoster(['migrate'], env)).code).toBe(0);
    const gateway: RunningRoster = startRoster(['gateway'], { ...env, GATEWAY_PORT: String(await freePort()) });
    cleanups.push(() => gateway.stop());
    await gateway.waitForOutput(/gateway is running/);
    await until(() => fake.calls.includes('getUpdates'), 'the gateway to poll Telegram', 60_000);
    // Control: receiving while nothing else polls the bot.
    const before = await telegram();
    expect(before).toMatchObject({ state: 'receiving', pid: gateway.child.pid });

    // A process outside this installation polls the same bot, and keeps polling through its own 409s (as a
    // script with a retrying library does): Telegram ends whichever poll is older, so the gateway's soon gets 409.
    const abort = new AbortController();
    const outsider = (async () => {
      while (!abort.signal.aborted) {
        const response = await fetch(`${fake.apiRoot}/bot${fake.token}/getUpdates`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ timeout: 1 }),
          signal: abort.signal,
        }).catch(() => null);
        await response?.body?.cancel();
      }
    })();
    cleanups.push(async () => {
      abort.abort();
      await outsider;
    });
    await until(async () => (await telegram()).state === 'failing', 'the gateway to let the account go', 60_000);
    const failing = await telegram();
    expect(failing).toMatchObject({ state: 'failing', holder: before.holder, since: null });
    expect(failing.detail).toMatch(new RegExp(`^nobody receives it: ${escape(before.holder!)} did, and its channel failed at \\S+: Telegram gave this bot’s updates to another poller \\(409\\)`));
    const doctor = await runRoster(['doctor', '--json'], env);
    expect(doctor.code).toBe(1);
    expect((JSON.parse(doctor.stdout) as { checks: Array<{ name: string; status: string; detail: string }> }).checks.find((check) => check.name === 'telegram')).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining(failing.detail),
    });
    expect(JSON.stringify(failing) + doctor.stdout).not.toContain(fake.token);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
