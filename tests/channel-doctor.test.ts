import fs from 'node:fs';
import path from 'node:path';
import { WhatsAppSession } from '@roster/channel-whatsapp';
import { testInstallationKey, testSecretKey } from '@roster/config/testing';
import { openEmbeddedDatabase } from '@roster/db';
import { createLinkedDeviceStore } from '@roster/gateway';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeDiscord } from '@roster/channel-discord/testing';
import { startFakeSlack } from '@roster/channel-slack/testing';
import { startFakeTelegram } from '@roster/channel-telegram/testing';
import { runRoster, tempDataDir } from './support/roster-process.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function dataDir(): string {
  const dir = tempDataDir();
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** What the doctor says of a bot account no gateway has taken. */
const nobody = 'nobody receives it: no gateway has taken it yet (start roster gateway or roster start)';

describe('roster doctor, channels', () => {
  it('calls a channel ok only when its platform takes the token, and says why not otherwise', async () => {
    const telegram = await startFakeTelegram();
    cleanups.push(() => telegram.close());
    const slack = await startFakeSlack();
    cleanups.push(() => slack.close());
    const discord = await startFakeDiscord();
    cleanups.push(() => discord.close());
    const dir = dataDir();
    expect((await runRoster(['migrate'], { ROSTER_DATA_DIR: dir })).code).toBe(0);
    const base = { ROSTER_DATA_DIR: dir, TELEGRAM_API_ROOT: telegram.apiRoot, SLACK_API_URL: slack.apiUrl, SLACK_SIGNING_SECRET: slack.signingSecret, DISCORD_API_URL: discord.apiUrl };
    const channels = (stdout: string) =>
      Object.fromEntries(
        (JSON.parse(stdout) as { checks: Array<{ name: string; status: string; detail: string }> }).checks
          .filter((check) => ['telegram', 'slack', 'discord'].includes(check.name))
          .map((check) => [check.name, `${check.status}: ${check.detail}`]),
      );

    const good = await runRoster(['doctor', '--json'], { ...base, TELEGRAM_BOT_TOKEN: telegram.token, SLACK_BOT_TOKEN: slack.botToken, DISCORD_BOT_TOKEN: discord.token });
    // The tokens are good, but no gateway runs: a bot nobody receives fails, with why (Slack over HTTP is every server's).
    expect(good.code, good.stdout).toBe(1);
    expect(channels(good.stdout)).toEqual({
      telegram: `fail: token accepted: @roster_test_bot at ${telegram.apiRoot}; long polling; ${nobody}`,
      slack: 'ok: token accepted: roster in The team; events over HTTP at http://127.0.0.1:8420/slack/events',
      discord: `fail: token accepted: roster at ${discord.apiUrl}; gateway; ${nobody}`,
    });
    expect(telegram.calls).toEqual(['getMe']);
    expect(slack.calls).toEqual(['auth.test']);
    expect(discord.calls).toEqual(['GET /users/@me', 'GET /applications/@me']);

    const bad = await runRoster(['doctor', '--json'], { ...base, TELEGRAM_BOT_TOKEN: '123456:wrong', SLACK_BOT_TOKEN: 'xoxb-wrong', DISCORD_BOT_TOKEN: 'MTA-x' });
    expect(bad.code).toBe(1);
    expect(channels(bad.stdout)).toEqual({
      telegram: 'fail: Telegram refused the bot token (getMe): check TELEGRAM_BOT_TOKEN.',
      slack: 'fail: Slack refused the bot token (auth.test: invalid_auth): check SLACK_BOT_TOKEN.',
      discord: 'fail: Discord refused the bot token (users/@me): check DISCORD_BOT_TOKEN.',
    });
    // A token stored with roster channel add is checked the same way, with no variable set.
    expect((await runRoster(['channel', 'add', 'telegram', '--token', telegram.token], { ROSTER_DATA_DIR: dir })).code).toBe(0);
    expect((await runRoster(['channel', 'add', 'discord', '--token', discord.token], { ROSTER_DATA_DIR: dir })).code).toBe(0);
    const stored = await runRoster(['doctor', '--json'], base);
    expect(channels(stored.stdout).telegram).toBe(`fail: token accepted: @roster_test_bot at ${telegram.apiRoot}; long polling; ${nobody}`);
    expect(channels(stored.stdout).discord).toBe(`fail: token accepted: roster at ${discord.apiUrl}; gateway; ${nobody}`);
    expect(stored.stdout + stored.stderr).not.toContain(telegram.token);
    expect(stored.stdout + stored.stderr).not.toContain(discord.token);

    // No secret is printed, right or wrong.
    for (const secret of [telegram.token, slack.botToken, slack.signingSecret, discord.token, '123456:wrong', 'xoxb-wrong', 'MTA-x']) {
      expect(good.stdout + good.stderr + bad.stdout + bad.stderr).not.toContain(secret);
    }
  }, 180_000);
});

describe('WhatsApp in roster doctor and roster channel add', () => {
  it('reports a link not made yet, then the number once linked; channel add leaves a linked account as it is', async () => {
    const dir = dataDir();
    const env = { ROSTER_DATA_DIR: dir, ROSTER_SECRET_KEY: testSecretKey, WHATSAPP_ENABLED: 'true' };
    expect((await runRoster(['migrate'], env)).code).toBe(0);
    const before = await runRoster(['doctor', '--json'], env);
    expect(before.stdout).toContain('"name":"whatsapp","status":"fail","detail":"not linked yet: run roster channel add whatsapp and scan the QR code with the phone (WhatsApp → Linked devices)"');

    // Linked, as the gateway stores it (the embedded database is one process's at a time: between two runs).
    const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
    try {
      const { state, saveCreds } = await new WhatsAppSession(createLinkedDeviceStore(database, 'whatsapp', 'default'), testInstallationKey).authState();
      Object.assign(state.creds, { me: { id: '4915550000000:12@s.whatsapp.net', name: 'Roster' } });
      await saveCreds();
    } finally {
      await database.close();
    }
    // roster channel add whatsapp binds, says the account is linked already, and shows no code.
    const add = await runRoster(['channel', 'add', 'whatsapp'], env);
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toBe(
      'Bound whatsapp → the whole wallet; answers linked people only (strangers get the pairing hint).\nWhatsApp is linked already, as +4915550000000; to link another number, unlink this device on the phone first.\n',
    );
    const after = await runRoster(['doctor', '--json'], env);
    // Linked, but no gateway receives it: the doctor fails it and says so.
    expect(after.stdout).toContain(`"name":"whatsapp","status":"fail","detail":"linked as +4915550000000; ${nobody}"`);
  }, 180_000);
});
