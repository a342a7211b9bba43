import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { until } from '@roster/channels/testing';
import { startFakeTelegram } from '@roster/channel-telegram/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';
import { repliesIn } from './support/replies.js';

/**
 * One holder per bot account. Telegram hands a bot's updates to one long
 * poll at a time: a second poller ends the first with 409, and telegraf
 * stops polling for good. Two `roster gateway` processes, as a rolling
 * deploy runs them, on one database: one serves the bot, the other stands
 * by, and takes it over when the first stops. The fake answers a superseded
 * poll 409 as Telegram does; the control shows two pollers without leases
 * do collide.
 */

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('two gateways, one Telegram bot', () => {
  it('one polls, the other stands by and takes the bot over when the first stops; no poll is ever cut off', { timeout: 300_000 }, async () => {
    const dir = tempDataDir();
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const fake = await startFakeTelegram();
    cleanups.push(() => fake.close());
    const env = {
      ROSTER_DATA_DIR: dir,
      ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`,
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
      // The gateways say in their log whether they serve the bot or stand by.
      LOG_LEVEL: 'info',
    };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    expect((await runRoster(['person', 'add', 'Ada'], env)).code).toBe(0);
    const code = await runRoster(['person', 'link-code', 'Ada'], env);

    const first: RunningRoster = startRoster(['gateway'], { ...env, GATEWAY_PORT: String(await freePort()) });
    cleanups.push(() => first.stop());
    await first.waitForOutput(/gateway is running/);
    await until(() => fake.calls.includes('getUpdates'), 'the first gateway to poll Telegram', 60_000);
    const second: RunningRoster = startRoster(['gateway'], { ...env, GATEWAY_PORT: String(await freePort()) });
    cleanups.push(() => second.stop());
    await second.waitForOutput(/gateway is running/);
    // What each says of the bot account is in its log (standard error).
    const logged = (roster: RunningRoster, pattern: RegExp) => until(() => pattern.test(roster.output().stderr), `${pattern}`, 60_000);
    await logged(second, /another gateway holds this bot account: standing by/);

    const ada = fake.user(2);
    await fake.command(ada, 'dm', `link ${code.stdout.trim()}`);
    expect(await repliesIn(fake, fake.dmChatId(ada), 1)).toEqual(['Linked: you are Ada here now.']);
    await fake.deliver({ chat: 'dm', from: ada, text: 'remember that my locker is number 12' });
    expect((await repliesIn(fake, fake.dmChatId(ada), 2))[1]).toBe('Noted: your locker is number 12');

    // roster doctor names the holder.
    const doctor = await runRoster(['doctor', '--json'], env);
    const telegram = (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; status: string; detail: string }> }).checks.find((check) => check.name === 'telegram');
    expect(telegram).toMatchObject({ status: 'ok', detail: expect.stringMatching(/received by \S+ since /) });

    // A rolling deploy: the first stops; the second takes the bot over and answers, from the same memory.
    expect(await first.stop()).toBe(0);
    await logged(second, /took over the bot account/);
    await fake.deliver({ chat: 'dm', from: ada, text: 'what do you know about my locker?' });
    expect((await repliesIn(fake, fake.dmChatId(ada), 3))[2]).toContain('your locker is number 12');

    // Every message was answered once, and no poll was cut off by another.
    expect(fake.sent().filter((message) => message.chatId === fake.dmChatId(ada))).toHaveLength(3);
    // No gateway was cut off by another's poll: neither says its polling stopped.
    for (const gateway of [first, second]) expect(gateway.output().stderr).not.toMatch(/Telegram polling stopped|another poller/);
  });

  it('control: two pollers of one bot without a lease collide, and the one cut off says it stopped receiving', async () => {
    const fake = await startFakeTelegram();
    cleanups.push(() => fake.close());
    // Two adapters of the same bot against the same Bot API, as two processes would make them.
    const { createTelegramAdapter } = await import('@roster/channel-telegram');
    const adapters = [createTelegramAdapter({ token: fake.token, apiRoot: fake.apiRoot }), createTelegramAdapter({ token: fake.token, apiRoot: fake.apiRoot })];
    const stopped: string[] = [];
    const abort = new AbortController();
    cleanups.push(async () => {
      abort.abort();
      await Promise.allSettled(adapters.map((adapter) => adapter.stop()));
    });
    for (const adapter of adapters) {
      await adapter.start({ signal: abort.signal, onMessage: () => {}, onApprovalPress: async () => ({ text: '', decided: false }), onStopped: (reason) => void stopped.push(reason) });
    }
    await until(() => fake.conflicts() > 0 && stopped.length > 0, 'a poll cut off by the other poller', 60_000);
    expect(stopped[0]).toMatch(/409/);
  });
});
