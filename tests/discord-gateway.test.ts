import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { until, type FakePlatform, type PlatformUser } from '@roster/channels/testing';
import { pairingHint } from '@roster/core';
import { migrate, openEmbeddedDatabase } from '@roster/db';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord } from '@roster/channel-discord/testing';
import { startFakeTelegram } from '@roster/channel-telegram/testing';
import { freePort, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';
import { repliesIn } from './support/replies.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** Say something in a person's direct messages with the bot, and the bot's answer. */
async function say(fake: FakePlatform, from: PlatformUser, text: string): Promise<string> {
  const chatId = fake.dmChatId(from);
  const before = fake.sent().filter((message) => message.chatId === chatId).length;
  await fake.deliver({ chat: 'dm', from, text });
  return (await repliesIn(fake, chatId, before + 1, 20_000))[before]!;
}

/** The gateway registered the slash commands `times` times: a bot that is connected and reading (again, after a restart). */
const registered = (fake: FakeDiscord, times: number) => fake.calls.filter((call) => call === 'PUT /applications/:id/commands').length === times;

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
    expect((await repliesIn(fake, fake.dmChatId(ada), 2))[1]).toBe('Noted: your locker is number 12');
    // Server chatter that is not for the bot is neither answered nor kept.
    await fake.deliver({ chat: 'group', from: ada, text: 'remember that lunch is at noon' });
    // A new message, a new turn: the answer comes from memory.
    await fake.deliver({ chat: 'dm', from: ada, text: 'what do you know about my locker?' });
    expect((await repliesIn(fake, fake.dmChatId(ada), 3))[2]).toContain('your locker is number 12');
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
    const roster = await rosterWith(env);
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
    expect((await repliesIn(fake, fake.dmChatId(ada), 2))[1]).toBe('Noted: your locker is number 12');

    // A bound channel stored while Roster runs: the gateway reconnects with it.
    const bound = await runRoster(['channel', 'add', 'discord', '--channel', fake.secondChannelId], env);
    expect(bound.code, bound.stderr).toBe(0);
    await until(() => fake.sessions() === 2 && fake.connected() === 1 && registered(fake, 2), 'the gateway to reconnect with the bound channel', 30_000);
    // In #general (not bound) chatter stays chatter; in #projects (bound) the same words, without a mention, are answered.
    await fake.deliver({ chat: 'group', from: ada, text: 'hello, who is around today?' });
    await fake.deliver({ chat: 'group', channelId: fake.secondChannelId, from: ada, text: 'hello, who is around today?' });
    expect(await repliesIn(fake, fake.secondChannelId, 1, 20_000)).toEqual([expect.stringContaining("I'm Scout.")]);

    // Removed: the gateway disconnects from Discord.
    const removed = await runRoster(['channel', 'remove', 'discord'], env);
    expect(removed.code, removed.stderr).toBe(0);
    await until(() => fake.connected() === 0, 'the gateway to let go of Discord', 30_000);
    expect(await roster.stop()).toBe(0);
    expect(fake.sent().filter((message) => message.chatId === fake.groupChatId)).toEqual([]);
    const database = await openEmbeddedDatabase(path.join(env.ROSTER_DATA_DIR!, 'pglite'));
    cleanups.push(() => database.close());
    await migrate(database);
    const conversations = await database.adminScope('test: the server channels Roster kept', async (tx) => {
      const { rows } = await tx.query<{ external_id: string }>(`select external_id from conversations where channel = 'discord' and kind = 'group'`);
      return rows.map((row) => row.external_id);
    });
    // Only the bound channel reached the core.
    expect(conversations).toEqual([fake.secondChannelId]);
  }, 180_000);

  it('keeps a correction said on Discord to its agent and person; forget on Telegram is forgotten on Discord too, while another fact stays', async () => {
    const discord = await startFakeDiscord();
    cleanups.push(() => discord.close());
    const telegram = await startFakeTelegram();
    cleanups.push(() => telegram.close());
    // DISCORD_CHANNELS binds #projects: there every message is for the bot.
    const env = await setUp(discord, {
      DISCORD_BOT_TOKEN: discord.token,
      DISCORD_CHANNELS: discord.secondChannelId,
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.apiRoot,
    });
    for (const args of [
      ['agent', 'add', '--name', 'Coder', '--job', 'writes code'],
      ['person', 'add', 'Bob'],
      ['channel', 'add', 'discord', '--agent', 'Scout'],
      ['channel', 'add', 'telegram', '--agent', 'Scout'],
    ]) {
      const result = await runRoster(args, env);
      expect(result.code, result.stderr).toBe(0);
    }
    const roster = await rosterWith(env);
    await until(() => discord.connected() === 1 && registered(discord, 1) && telegram.calls.includes('getUpdates'), 'the gateway to reach Discord and Telegram', 30_000);

    // Ada links her Discord and her Telegram accounts; Bob his Discord one.
    const linkCode = async (name: string) => {
      const result = await runRoster(['person', 'link-code', name], env);
      expect(result.code, result.stderr).toBe(0);
      return result.stdout.trim();
    };
    const ada = discord.user(2);
    const bob = discord.user(3);
    const adaOnTelegram = telegram.user(2);
    await discord.slash(ada, 'dm', 'link', { code: await linkCode('Ada') });
    expect(await repliesIn(discord, discord.dmChatId(ada), 1)).toEqual(['Linked: you are Ada here now.']);
    await discord.slash(bob, 'dm', 'link', { code: await linkCode('Bob') });
    expect(await repliesIn(discord, discord.dmChatId(bob), 1)).toEqual(['Linked: you are Bob here now.']);
    await telegram.command(adaOnTelegram, 'dm', `link ${await linkCode('Ada')}`);
    expect(await repliesIn(telegram, telegram.dmChatId(adaOnTelegram), 1)).toEqual(['Linked: you are Ada here now.']);

    // A correction on Discord: Scout takes it for Ada.
    expect(await say(discord, ada, 'remember that my desk is on floor 3')).toBe('Noted: your desk is on floor 3');
    expect(await say(discord, ada, "that's wrong, my desk is on floor 4")).toBe('Corrected: your desk is on floor 4');
    const desk = await say(discord, ada, 'what do you know about my desk?');
    expect(desk).toContain('your desk is on floor 4');
    expect(desk).not.toContain('floor 3');
    // Bob, asking Scout, and Coder, asked by Ada, know nothing of it.
    expect(await say(discord, bob, 'what do you know about my desk?')).toBe("I don't know anything about your desk yet.");
    await discord.slash(ada, 'dm', 'agent', { name: 'Coder' });
    expect((await repliesIn(discord, discord.dmChatId(ada), 5))[4]).toBe('Now talking to Coder.');
    expect(await say(discord, ada, 'what do you know about my desk?')).toBe("I don't know anything about your desk yet.");
    await discord.slash(ada, 'dm', 'agent', { name: 'Scout' });
    expect((await repliesIn(discord, discord.dmChatId(ada), 7))[6]).toBe('Now talking to Scout.');
    // In the bound channel, a message without a mention is answered.
    await discord.deliver({ chat: 'group', channelId: discord.secondChannelId, from: bob, text: 'hello, who is around today?' });
    expect(await repliesIn(discord, discord.secondChannelId, 1, 20_000)).toEqual([expect.stringContaining("I'm Scout.")]);

    // Told on Discord; Telegram recalls it, being the same person and agent (positive control).
    expect(await say(discord, ada, 'remember that my bike is green')).toBe('Noted: your bike is green');
    expect(await say(telegram, adaOnTelegram, 'what do you know about my bike?')).toContain('your bike is green');
    // Forgotten on Telegram: neither door recalls it; the desk, not forgotten, is still recalled on both.
    expect(await say(telegram, adaOnTelegram, 'forget that my bike is green')).toBe('Forgotten.');
    expect(await say(telegram, adaOnTelegram, 'what do you know about my bike?')).not.toContain('green');
    expect(await say(discord, ada, 'what do you know about my bike?')).not.toContain('green');
    expect(await say(discord, ada, 'what do you know about my desk?')).toContain('your desk is on floor 4');
    expect(await say(telegram, adaOnTelegram, 'what do you know about my desk?')).toContain('your desk is on floor 4');

    expect(await roster.stop()).toBe(0);
    const database = await openEmbeddedDatabase(path.join(env.ROSTER_DATA_DIR!, 'pglite'));
    cleanups.push(() => database.close());
    await migrate(database);
    const kept = await database.adminScope('test: read what was kept', async (tx) => ({
      corrections: (
        await tx.query<{ event: string }>(
          `select a.name || '/' || coalesce(p.name, '-') || '/' || e.channel as event from learning_events e join agents a on a.id = e.agent_id left join people p on p.id = e.person_id where e.kind = 'correction'`,
        )
      ).rows.map((row) => row.event),
      bikeFacts: (await tx.query(`select 1 from facts where content like '%bike%'`)).rows.length,
      bikeMessages: (await tx.query(`select 1 from messages where content like '%bike is green%'`)).rows.length,
      tombstones: (await tx.query<{ person: string }>(`select p.name as person from tombstones t join people p on p.id = t.person_id`)).rows,
    }));
    // The correction is there for Scout and Ada, from Discord; none for Bob, none for Coder.
    expect(kept.corrections).toEqual(['Scout/Ada/discord']);
    expect(kept).toMatchObject({ bikeFacts: 0, bikeMessages: 0, tombstones: [{ person: 'Ada' }] });
  }, 240_000);
});
