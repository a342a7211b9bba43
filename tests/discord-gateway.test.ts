import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { until } from '@roster/channels/conformance';
import { pairingHint } from '@roster/core';
import { migrate, openEmbeddedDatabase } from '@roster/db';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord } from '../packages/channel-discord/src/fake-discord.js';
import { freePort, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** What the bot sent to a channel, once it has sent `count` messages there. */
async function repliesIn(fake: FakeDiscord, chatId: string, count: number): Promise<string[]> {
  await until(() => fake.sent().filter((message) => message.chatId === chatId).length >= count, `${count} messages to ${chatId}`, 20_000);
  return fake
    .sent()
    .filter((message) => message.chatId === chatId)
    .map((message) => message.text);
}

async function rosterWith(env: Record<string, string>): Promise<RunningRoster> {
  const roster = startRoster(['start'], env);
  cleanups.push(() => roster.stop());
  await roster.waitForOutput(/running at/);
  return roster;
}

async function setUp(fake: FakeDiscord, extra: Record<string, string>): Promise<Record<string, string>> {
  const dir = tempDataDir();
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const env = { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`, PORT: String(await freePort()), DISCORD_API_URL: fake.apiUrl, ...extra };
  expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
  expect((await runRoster(['person', 'add', 'Ada'], env)).code).toBe(0);
  return env;
}

describe('Discord through roster start', () => {
  it('gives a stranger only the pairing hint and keeps nothing; a person who links with a code is remembered across messages', async () => {
    const fake = await startFakeDiscord();
    cleanups.push(() => fake.close());
    const env = await setUp(fake, { DISCORD_BOT_TOKEN: fake.token });
    const roster = await rosterWith(env);
    // The gateway connected and registered the slash commands.
    await until(() => fake.connected() === 1 && fake.commands().length > 0, 'the gateway to connect to Discord', 30_000);

    // A stranger, under the default pairing policy: the hint, whatever they say, and nothing kept.
    const stranger = fake.user(1);
    await fake.deliver({ chat: 'dm', from: stranger, text: 'remember that my pin is 4321' });
    expect(await repliesIn(fake, fake.dmChatId(stranger), 1)).toEqual([pairingHint()]);

    // Ada links her Discord account with a code the owner made for her, with the /link slash command.
    const code = await runRoster(['person', 'link-code', 'Ada'], env);
    expect(code.code, code.stderr).toBe(0);
    const ada = fake.user(2);
    await fake.slash(ada, 'dm', 'link', { code: code.stdout.trim() });
    expect(await repliesIn(fake, fake.dmChatId(ada), 1)).toEqual(['Linked: you are Ada here now.']);
    await fake.deliver({ chat: 'dm', from: ada, text: 'remember that my locker is number 12' });
    expect((await repliesIn(fake, fake.dmChatId(ada), 2))[1]).toBe('Noted: my locker is number 12');
    // Server chatter that is not for the bot is neither answered nor kept.
    await fake.deliver({ chat: 'group', from: ada, text: 'remember that lunch is at noon' });
    // A new message, a new turn: the answer comes from memory.
    await fake.deliver({ chat: 'dm', from: ada, text: 'what do you know about my locker?' });
    expect((await repliesIn(fake, fake.dmChatId(ada), 3))[2]).toContain('my locker is number 12');
    // The stranger was answered once, and only with the hint; nothing went to the server channel.
    expect(await repliesIn(fake, fake.dmChatId(stranger), 1)).toEqual([pairingHint()]);
    expect(fake.sent().filter((message) => message.chatId === fake.groupChatId)).toEqual([]);

    expect(await roster.stop()).toBe(0);
    const output = roster.output();
    expect(output.stdout + output.stderr).not.toContain(fake.token);
    const database = await openEmbeddedDatabase(path.join(env.ROSTER_DATA_DIR!, 'pglite'));
    cleanups.push(() => database.close());
    await migrate(database);
    const kept = await database.adminScope('test: read what was kept', async (tx) => ({
      strangerConversations: (await tx.query('select 1 from conversations where external_id = $1', [fake.dmChatId(stranger)])).rows.length,
      pin: (await tx.query(`select 1 from messages where content like '%4321%'`)).rows.length,
      lunch: (await tx.query(`select 1 from messages where content like '%lunch%'`)).rows.length,
      pinFacts: (await tx.query(`select 1 from facts where content like '%4321%'`)).rows.length,
      locker: (await tx.query<{ person: string }>(`select p.name as person from facts f join people p on p.id = f.person_id where f.content = 'my locker is number 12'`)).rows,
      refused: (await tx.query<{ count: number }>(`select count from refused_messages where channel = 'discord'`)).rows,
    }));
    expect(kept).toEqual({ strangerConversations: 0, pin: 0, lunch: 0, pinFacts: 0, locker: [{ person: 'Ada' }], refused: [{ count: 1 }] });
  }, 120_000);

  it('serves a token stored with roster channel add while Roster runs, and lets go of it when removed', async () => {
    const fake = await startFakeDiscord();
    cleanups.push(() => fake.close());
    const env = await setUp(fake, {});
    await rosterWith(env);
    // No token yet: Discord is not served.
    expect(fake.calls).toEqual([]);

    const stored = await runRoster(['channel', 'add', 'discord', '--token', fake.token], env);
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.stdout + stored.stderr).not.toContain(fake.token);
    await until(() => fake.connected() === 1 && fake.commands().length > 0, 'the gateway to pick the token up', 30_000);

    const ada = fake.user(2);
    const code = await runRoster(['person', 'link-code', 'Ada'], env);
    await fake.slash(ada, 'dm', 'link', { code: code.stdout.trim() });
    expect(await repliesIn(fake, fake.dmChatId(ada), 1)).toEqual(['Linked: you are Ada here now.']);
    await fake.deliver({ chat: 'dm', from: ada, text: 'remember that my locker is number 12' });
    expect((await repliesIn(fake, fake.dmChatId(ada), 2))[1]).toBe('Noted: my locker is number 12');

    // Removed: the gateway disconnects from Discord.
    const removed = await runRoster(['channel', 'remove', 'discord'], env);
    expect(removed.code, removed.stderr).toBe(0);
    await until(() => fake.connected() === 0, 'the gateway to let go of Discord', 30_000);
  }, 120_000);
});
