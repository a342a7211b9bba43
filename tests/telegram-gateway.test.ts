import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { until } from '@roster/channels/testing';
import { pairingHint } from '@roster/core';
import { migrate, openEmbeddedDatabase } from '@roster/db';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '@roster/channel-telegram/testing';
import { freePort, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';
import { repliesIn } from './support/replies.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('Telegram through roster start', () => {
  it('gives a stranger only the pairing hint and keeps nothing; a person who links with a code is remembered across messages', async () => {
    const dir = tempDataDir();
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const fake = await startFakeTelegram();
    cleanups.push(() => fake.close());
    const env = {
      ROSTER_DATA_DIR: dir,
      ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`,
      PORT: String(await freePort()),
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
    };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    expect((await runRoster(['person', 'add', 'Ada'], env)).code).toBe(0);

    const roster: RunningRoster = startRoster(['start'], env);
    cleanups.push(() => roster.stop());
    await roster.waitForOutput(/running at/);
    await until(() => fake.calls.includes('getUpdates'), 'the gateway to poll Telegram', 20_000);

    // A stranger, under the default pairing policy: the hint, whatever they say, and nothing kept.
    const stranger = fake.user(1);
    await fake.deliver({ chat: 'dm', from: stranger, text: 'remember that my pin is 4321' });
    expect(await repliesIn(fake, fake.dmChatId(stranger), 1)).toEqual([pairingHint()]);

    // Ada links her Telegram handle with a code the owner made for her.
    const code = await runRoster(['person', 'link-code', 'Ada'], env);
    expect(code.code, code.stderr).toBe(0);
    const ada = fake.user(2);
    await fake.command(ada, 'dm', `link ${code.stdout.trim()}`);
    expect(await repliesIn(fake, fake.dmChatId(ada), 1)).toEqual(['Linked: you are Ada here now.']);
    await fake.deliver({ chat: 'dm', from: ada, text: 'remember that my locker is number 12' });
    expect((await repliesIn(fake, fake.dmChatId(ada), 2))[1]).toBe('Noted: your locker is number 12');
    // A new message, a new turn: the answer comes from memory.
    await fake.deliver({ chat: 'dm', from: ada, text: 'what do you know about my locker?' });
    expect((await repliesIn(fake, fake.dmChatId(ada), 3))[2]).toContain('your locker is number 12');
    // The stranger was answered once, and only with the hint.
    expect(await repliesIn(fake, fake.dmChatId(stranger), 1)).toEqual([pairingHint()]);

    expect(await roster.stop()).toBe(0);
    const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
    cleanups.push(() => database.close());
    await migrate(database);
    const kept = await database.adminScope('test: read what was kept', async (tx) => ({
      strangerConversations: (await tx.query('select 1 from conversations where external_id = $1', [fake.dmChatId(stranger)])).rows.length,
      pin: (await tx.query(`select 1 from messages where content like '%4321%'`)).rows.length,
      pinFacts: (await tx.query(`select 1 from facts where content like '%4321%'`)).rows.length,
      locker: (await tx.query<{ person: string }>(`select p.name as person from facts f join people p on p.id = f.person_id where f.content = 'my locker is number 12'`)).rows,
      refused: (await tx.query<{ count: number }>(`select count from refused_messages where channel = 'telegram'`)).rows,
    }));
    expect(kept).toEqual({ strangerConversations: 0, pin: 0, pinFacts: 0, locker: [{ person: 'Ada' }], refused: [{ count: 1 }] });
  });

  it('in webhook mode, takes a token stored while running, refuses a request without the secret and keeps nothing of it', async () => {
    const dir = tempDataDir();
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const fake = await startFakeTelegram();
    cleanups.push(() => fake.close());
    const port = await freePort();
    const env = {
      ROSTER_DATA_DIR: dir,
      ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`,
      PORT: String(port),
      TELEGRAM_API_ROOT: fake.apiRoot,
      TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/webhook`,
    };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    expect((await runRoster(['person', 'add', 'Ada'], env)).code).toBe(0);
    const roster: RunningRoster = startRoster(['start'], env);
    cleanups.push(() => roster.stop());
    await roster.waitForOutput(/running at/);
    // No token yet: Telegram is not served, and its webhook path says so.
    const before = await fetch(`http://127.0.0.1:${port}/telegram/webhook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(before.status).toBe(404);
    expect(fake.calls).toEqual([]);

    // The owner stores the token while Roster runs: the gateway picks it up and sets the webhook.
    const stored = await runRoster(['channel', 'add', 'telegram', '--token', fake.token], env);
    expect(stored.code, stored.stderr).toBe(0);
    await until(() => fake.webhook() !== null, 'the gateway to set the webhook', 30_000);
    expect(fake.webhook()!.url).toBe(env.TELEGRAM_WEBHOOK_URL);
    expect(fake.calls).not.toContain('getUpdates');

    const ada = fake.user(2);
    const forged = (secret: string | null) =>
      fetch(env.TELEGRAM_WEBHOOK_URL, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(secret === null ? {} : { 'x-telegram-bot-api-secret-token': secret }) },
        body: JSON.stringify({
          update_id: 77,
          message: { message_id: 77, date: 1, chat: { id: Number(ada.id), type: 'private' }, from: { id: Number(ada.id), is_bot: false, first_name: 'Ada' }, text: 'remember that my pin is 5150' },
        }),
      }).then((response) => response.status);
    expect(await forged(null)).toBe(401);
    expect(await forged('guessed-secret')).toBe(401);

    // Positive control: Telegram's own requests, with the secret, reach the agents.
    const code = await runRoster(['person', 'link-code', 'Ada'], env);
    await fake.command(ada, 'dm', `link ${code.stdout.trim()}`);
    expect(await repliesIn(fake, fake.dmChatId(ada), 1)).toEqual(['Linked: you are Ada here now.']);
    await fake.deliver({ chat: 'dm', from: ada, text: 'remember that my locker is number 12' });
    expect((await repliesIn(fake, fake.dmChatId(ada), 2))[1]).toBe('Noted: your locker is number 12');
    expect(fake.webhookAnswers()).toEqual([200, 200]);

    expect(await roster.stop()).toBe(0);
    const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
    cleanups.push(() => database.close());
    await migrate(database);
    const kept = await database.adminScope('test: read what was kept', async (tx) => ({
      forged: (await tx.query(`select 1 from messages where content like '%5150%'`)).rows.length,
      locker: (await tx.query(`select 1 from facts where content = 'my locker is number 12'`)).rows.length,
    }));
    expect(kept).toEqual({ forged: 0, locker: 1 });
  });
});
