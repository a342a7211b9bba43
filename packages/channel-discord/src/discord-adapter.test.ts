import { ChannelError, type ChannelEvent } from '@roster/channels';
import { serveChannel, type ServedChannel } from '@roster/channel-host';
import { until } from '@roster/channels/testing';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { maxFileBytes, type Person } from '@roster/core';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createApprovalDesk, listLessons } from '@roster/learning';
import { createRuntime, type Runtime } from '@roster/runtime';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { checkDiscordToken, createDiscordAdapter } from './discord-adapter.js';
import { startFakeDiscord, type FakeDiscord } from './fake-discord.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function fake(options: Parameters<typeof startFakeDiscord>[0] = {}): Promise<FakeDiscord> {
  const discord = await startFakeDiscord(options);
  cleanups.push(() => discord.close());
  return discord;
}

/** Start the fake's adapter and keep what it hands over. */
async function capture(discord: FakeDiscord): Promise<ChannelEvent[]> {
  const events: ChannelEvent[] = [];
  await discord.adapter.start({ signal: new AbortController().signal, onMessage: (event) => void events.push(event), onApprovalPress: async () => ({ text: 'not here', decided: false }) });
  return events;
}

describe('the Discord adapter against a fake Discord', () => {
  it('asks the gateway for server messages, their content and direct messages, and registers the slash commands for servers and DMs', async () => {
    const discord = await fake();
    await capture(discord);
    const intents = discord.identifiedIntents()!;
    // Guilds, GuildMessages, DirectMessages, MessageContent.
    for (const bit of [1 << 0, 1 << 9, 1 << 12, 1 << 15]) expect(intents & bit).toBe(bit);
    const commands = discord.commands();
    expect(commands.map((command) => command.name).sort()).toEqual(['agent', 'agents', 'forget', 'help', 'link', 'memory', 'team']);
    for (const command of commands) expect(command.contexts).toEqual([0, 1]);
    expect(commands.find((command) => command.name === 'link')!.options).toEqual([expect.objectContaining({ name: 'code', type: 3, required: true })]);
    expect(discord.calls).toContain('PUT /applications/:id/commands');
  });

  it('resumes its session after the connection drops, and takes the message sent while it was down once, without identifying again', async () => {
    const discord = await fake();
    const events = await capture(discord);
    const user = discord.user(1);
    const before = await discord.deliver({ chat: 'dm', from: user, text: 'before the drop' });
    await discord.dropConnection();
    expect(discord.connected()).toBe(0);
    // Said while the bot was away: Discord keeps it for the session and sends it again on RESUME.
    const during = await discord.deliver({ chat: 'dm', from: user, text: 'while it was down' });
    expect(events.map((event) => [event.inbound.externalMessageId, event.inbound.text])).toEqual([
      [before.messageId, 'before the drop'],
      [during.messageId, 'while it was down'],
    ]);
    expect(discord.sessions()).toBe(1);
    expect(discord.connected()).toBe(1);
    // The control: the resumed session takes what comes next as before.
    const after = await discord.deliver({ chat: 'dm', from: user, text: 'after it came back' });
    expect(events.at(-1)?.inbound.externalMessageId).toBe(after.messageId);
  });

  it('hands over only the server messages that are for the bot, and a slash command as the core’s form', async () => {
    const discord = await fake();
    const events = await capture(discord);
    const user = discord.user(1);
    await discord.deliver({ chat: 'group', from: user, text: 'just chatting' });
    // A reply to someone else, not to the bot, is chatter too.
    const other = await discord.deliver({ chat: 'group', from: discord.user(2), text: 'earlier words' });
    await discord.deliver({ chat: 'group', from: user, text: 'me too', replyTo: { id: other.messageId, fromBot: false } });
    expect(events).toEqual([]);
    // Positive control: a mention is handed over, without the mention in the words.
    const mention = await discord.deliver({ chat: 'group', from: user, text: 'what is new?', mentionBot: true });
    expect(events.map((event) => [event.inbound.externalMessageId, event.inbound.text])).toEqual([[mention.messageId, 'what is new?']]);

    const command = await discord.slash(user, 'group', 'agent', { name: 'Scout', message: 'hello there' });
    await until(() => events.length === 2, 'the command');
    expect(events[1]!.inbound).toMatchObject({ text: '/agent Scout hello there', conversation: { kind: 'group', externalId: discord.groupChatId }, sender: { externalId: user.id, displayName: user.name } });
    // In a server, a command's answer is for the person alone.
    expect(events[1]!.target).toMatchObject({ chatId: discord.groupChatId, visibleTo: user.id, replyTo: `interaction:${command.interactionId}` });
  });

  it('hands over every person’s message in a bound channel, without a mention; the same message in another server channel stays in the adapter', async () => {
    const discord = await fake();
    const adapter = createDiscordAdapter({ token: discord.token, apiUrl: discord.apiUrl, boundChannels: [discord.secondChannelId] });
    cleanups.push(() => adapter.stop());
    const events: ChannelEvent[] = [];
    await adapter.start({ signal: new AbortController().signal, onMessage: (event) => void events.push(event), onApprovalPress: async () => ({ text: '', decided: false }) });
    const user = discord.user(7);
    // Negative control first: #general is not bound, so chatter there is not for the bot.
    await discord.deliver({ chat: 'group', from: user, text: 'who reviews the draft today?' });
    expect(events).toEqual([]);
    const bound = await discord.deliver({ chat: 'group', channelId: discord.secondChannelId, from: user, text: 'who reviews the draft today?' });
    // Another bot's message in the bound channel is not a person's.
    await discord.deliver({ chat: 'group', channelId: discord.secondChannelId, from: discord.user(8), text: 'beep', fromOtherBot: true });
    expect(events).toHaveLength(1);
    expect(events[0]!.inbound).toMatchObject({
      externalMessageId: bound.messageId,
      text: 'who reviews the draft today?',
      conversation: { kind: 'group', externalId: discord.secondChannelId },
      sender: { externalId: user.id },
    });
    // Taken as addressed to the bot; the answer replies to it in that channel.
    expect(events[0]).toMatchObject({ mentionsBot: true, replyToBot: false, target: { chatId: discord.secondChannelId, replyTo: bound.messageId } });
    // A mention in #general is still for the bot.
    await discord.deliver({ chat: 'group', from: user, text: 'and you?', mentionBot: true });
    expect(events.map((event) => event.inbound.conversation.externalId)).toEqual([discord.secondChannelId, discord.groupChatId]);
  });

  it('defers a slash command whose answer takes longer than Discord waits, then fills the deferred reply in and follows up', async () => {
    const discord = await fake();
    const events = await capture(discord);
    const user = discord.user(3);
    const command = await discord.slash(user, 'dm', 'memory', {});
    await until(() => events.length === 1, 'the command');
    // Nothing answers for now: Discord's three seconds go by.
    await until(() => discord.windowClosed(command.interactionId), 'the interaction window to close', 10_000);
    const interaction = () => discord.interactions().find((candidate) => candidate.id === command.interactionId)!;
    expect(interaction().callbacks.map((callback) => [callback.type, callback.status])).toEqual([[5, 204]]);
    expect(discord.sent()).toEqual([]);

    const first = await discord.adapter.sendText(events[0]!.target, 'Scout knows nothing about you yet.');
    const second = await discord.adapter.sendText(events[0]!.target, 'And a second part.');
    expect(interaction().webhookCalls.map((call) => [call.method, call.status])).toEqual([
      ['PATCH', 200],
      ['POST', 200],
    ]);
    const answers = discord.sent().filter((message) => message.chatId === discord.dmChatId(user));
    expect(answers.map((message) => [message.id, message.text])).toEqual([
      [first.id, 'Scout knows nothing about you yet.'],
      [second.id, 'And a second part.'],
    ]);
    // A streamed answer edits its message through the interaction.
    await discord.adapter.editText(events[0]!.target, first.id, 'Scout knows nothing about you yet, still.');
    expect(discord.edits().map((edit) => [edit.id, edit.text])).toEqual([[first.id, 'Scout knows nothing about you yet, still.']]);
  });

  it('answers a quick slash command at once, without deferring; an answer given past the window without deferring is refused', async () => {
    const discord = await fake({ adapter: { deferAfterMs: 60_000 } });
    const events = await capture(discord);
    const quick = await discord.slash(discord.user(4), 'dm', 'help', {});
    await until(() => events.length === 1, 'the quick command');
    await discord.adapter.sendText(events[0]!.target, 'Commands: …');
    expect(discord.interactions().find((candidate) => candidate.id === quick.interactionId)!.callbacks.map((callback) => [callback.type, callback.status])).toEqual([[4, 200]]);
    expect(discord.sent().map((message) => message.text)).toEqual(['Commands: …']);

    // Control: this adapter waits a minute before deferring, so an answer after Discord's three seconds finds the interaction gone.
    const late = await discord.slash(discord.user(5), 'dm', 'help', {});
    await until(() => events.length === 2, 'the late command');
    await until(() => discord.windowClosed(late.interactionId), 'the interaction window to close', 10_000);
    const refused = await discord.adapter.sendText(events[1]!.target, 'Commands: …').catch((error: unknown) => error);
    expect(ChannelError.isChannelError(refused) && refused.message).toMatch(/not answered within 3 seconds/);
    expect(discord.sent()).toHaveLength(1);
  });

  it('fetches an image and a voice message into the event, and refuses a file over 10 MB before downloading it', async () => {
    const discord = await fake();
    const events = await capture(discord);
    const user = discord.user(6);
    const picture = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 4]);
    await discord.deliver({ chat: 'dm', from: user, text: 'look', attachment: { kind: 'image', data: picture, mediaType: 'image/png', name: 'desk.png' } });
    await discord.deliver({ chat: 'dm', from: user, text: '', attachment: { kind: 'voice', data: new Uint8Array([1, 2, 3]), mediaType: 'audio/ogg' } });
    await discord.deliver({ chat: 'dm', from: user, text: 'big', attachment: { kind: 'document', data: new Uint8Array(maxFileBytes + 1), mediaType: 'application/pdf', name: 'big.pdf' } });
    await until(() => events.length === 3, 'three messages');
    expect(events.map((event) => event.media)).toEqual([['image'], ['voice'], ['file']]);
    const signal = new AbortController().signal;
    const image = await events[0]!.fetchFiles!(signal);
    expect(image).toEqual({ files: [{ kind: 'image', mediaType: 'image/png', data: picture, name: 'desk.png' }], skipped: [] });
    const voice = await events[1]!.fetchFiles!(signal);
    expect(voice.files.map((file) => [file.kind, file.mediaType, [...file.data]])).toEqual([['audio', 'audio/ogg', [1, 2, 3]]]);
    expect(discord.downloads()).toHaveLength(2);
    await expect(events[2]!.fetchFiles!(signal)).rejects.toThrow('That file is too large: the most Roster takes is 10 MB. Nothing was kept; send a smaller one.');
    expect(discord.downloads()).toHaveLength(2);
  });

  it('fails to start at once, saying what to do, when the Message Content intent is off or the token is refused', async () => {
    const off = await fake({ messageContentOff: true });
    await expect(capture(off)).rejects.toThrow('Discord refused the gateway intents: switch on the Message Content intent for the bot in the Developer Portal (Bot → Privileged Gateway Intents).');
    expect(off.sessions()).toBe(0);
    const wrong = await startFakeDiscord({ token: 'MTA.right.token' });
    cleanups.push(() => wrong.close());
    const adapter = createDiscordAdapter({ token: 'MTA.wrong.token', apiUrl: wrong.apiUrl });
    const failed = await adapter.start({ signal: new AbortController().signal, onMessage: () => undefined, onApprovalPress: async () => ({ text: '', decided: false }) }).catch((error: unknown) => error);
    expect(ChannelError.isChannelError(failed) && failed.message).toBe('Discord refused the bot token (connecting to the gateway): check DISCORD_BOT_TOKEN.');
    await adapter.stop();
    // Control: the same fake takes its own token.
    await capture(wrong);
    expect(wrong.sessions()).toBe(1);
  });

  it('says whether Discord takes a token (GET /users/@me) and the Message Content intent is on, without repeating the token', async () => {
    const discord = await fake();
    expect(await checkDiscordToken({ token: discord.token, apiUrl: discord.apiUrl })).toEqual({ ok: true, detail: `token accepted: roster at ${discord.apiUrl}` });
    const wrong = await checkDiscordToken({ token: 'MTA.wrong.token', apiUrl: discord.apiUrl });
    expect(wrong).toEqual({ ok: false, detail: 'Discord refused the bot token (users/@me): check DISCORD_BOT_TOKEN.' });
    expect(discord.calls).toEqual(['GET /users/@me', 'GET /applications/@me', 'GET /users/@me']);
    // The token is right, but Discord would refuse the intents Roster asks for.
    const off = await fake({ messageContentOff: true });
    expect(await checkDiscordToken({ token: off.token, apiUrl: off.apiUrl })).toEqual({
      ok: false,
      detail: `token accepted: roster at ${off.apiUrl}, but the Message Content intent is off: switch it on in the Developer Portal (Bot → Privileged Gateway Intents)`,
    });
  });
});

describe('Discord through the core', () => {
  let test: TestDatabase;
  let roster: Runtime;
  let owner: Person;
  let people = 0;

  beforeAll(async () => {
    test = await openTestDatabase();
    roster = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
    await roster.core.directory.addAgent({ name: 'Scout', job: 'finds and checks sources' });
    owner = await roster.core.directory.addPerson({ name: 'Olive', role: 'owner' });
    await roster.core.directory.bindChannel({ channel: 'discord', agent: 'Scout' });
  });
  afterAll(async () => {
    await test?.cleanup();
  });

  async function serve(discord: FakeDiscord, options: Partial<Parameters<typeof serveChannel>[0]> = {}): Promise<ServedChannel> {
    const served = await serveChannel({ adapter: discord.adapter, core: roster.core, ...options });
    cleanups.push(() => served.stop());
    return served;
  }
  async function linked(discord: FakeDiscord, n: number, person?: Person) {
    const user = discord.user(n);
    const who = person ?? (await roster.core.directory.addPerson({ name: `Person${++people}` }));
    await roster.core.directory.linkIdentity(who.id, 'discord', user.id, user.name);
    return user;
  }

  it('splits a reply longer than 2,000 characters into messages Discord takes, in a DM and under a slash command', async () => {
    const discord = await fake();
    const served = await serve(discord);
    const user = await linked(discord, 10);
    const text = Array.from({ length: 90 }, (_, index) => `Line ${index} is about fifty characters long, give or take.`).join('\n');
    expect(text.length).toBeGreaterThan(4000);
    // Control: Discord refuses one message over 2,000 characters.
    await expect(discord.adapter.sendText({ chatId: discord.dmChatId(user), recipient: user.id }, text)).rejects.toThrow(/50035/);
    expect(discord.sent()).toEqual([]);

    expect(await served.send({ chatId: discord.dmChatId(user), recipient: user.id }, text)).toBe(true);
    const parts = discord.sent().map((message) => message.text);
    expect(parts).toHaveLength(3);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(2000);
    expect(parts.join('\n')).toBe(text);

    // Under a slash command in a server: the reply, then follow-ups, each for the person alone.
    const command = await discord.slash(user, 'group', 'help', {});
    await served.settled();
    const interaction = discord.interactions().find((candidate) => candidate.id === command.interactionId)!;
    expect(interaction.callbacks.map((callback) => callback.type)).toEqual([4]);
    const help = discord.sent().filter((message) => message.chatId === discord.groupChatId);
    expect(help.map((message) => message.visibleTo)).toEqual([user.id]);
    expect(help[0]!.text).toContain('/link CODE');
  });

  it('answers a linked person in a bound channel without a mention; the same words in an unbound channel never reach the core', async () => {
    const discord = await fake();
    const adapter = createDiscordAdapter({ token: discord.token, apiUrl: discord.apiUrl, boundChannels: [discord.secondChannelId] });
    const served = await serveChannel({ adapter, core: roster.core });
    cleanups.push(() => served.stop());
    const user = await linked(discord, 30);
    const words = 'what do you know about the quarterly review?';
    await discord.deliver({ chat: 'group', from: user, text: words });
    await discord.deliver({ chat: 'group', channelId: discord.secondChannelId, from: user, text: words });
    await until(() => discord.sent().some((message) => message.chatId === discord.secondChannelId), 'the answer in the bound channel');
    await served.settled();
    // Positive control: Scout answered in the bound channel, the answer pinging nobody else.
    const answers = discord.sent().filter((message) => message.chatId === discord.secondChannelId);
    expect(answers).toHaveLength(1);
    expect(answers[0]!.text).toContain('quarterly review');
    // Negative: nothing was said in #general, and the core never stored a word from it.
    expect(discord.sent().filter((message) => message.chatId === discord.groupChatId)).toEqual([]);
    const stored = await test.database.adminScope('test: the conversations Discord reached', async (tx) => {
      const { rows } = await tx.query<{ external_id: string; messages: number }>(
        `select c.external_id, (select count(*)::int from messages m where m.conversation_id = c.id) as messages from conversations c where c.channel = 'discord' and c.external_id = any($1)`,
        [[discord.groupChatId, discord.secondChannelId]],
      );
      return rows;
    });
    expect(stored).toEqual([{ external_id: discord.secondChannelId, messages: 2 }]);
  });

  it('pushes an approval with buttons; a member’s press changes nothing, the owner’s decides and takes the buttons away', async () => {
    const discord = await fake();
    const directory = roster.core.directory;
    const ownerUser = await linked(discord, 20, owner);
    const member = await linked(discord, 21);
    const scout = (await directory.listAgents()).find((agent) => agent.name === 'Scout')!;
    const text = 'When asked for sources, give two and say how each was checked.';
    await test.database.adminScope('test: propose a lesson', (tx) => tx.query(`insert into approvals (agent_id, text, proposed_by_kind, proposed_by) values ($1, $2, 'agent', 'Scout')`, [scout.id, text]));
    await serve(discord, { approvals: createApprovalDesk(test.database, roster.memory.audit, directory), approvalPollMs: 60_000 });
    await until(() => discord.sent().some((message) => message.chatId === discord.dmChatId(ownerUser)), 'the approval to reach the owner');
    // The owner's handle opened a direct-message channel.
    expect(discord.calls).toContain('POST /users/@me/channels');
    const pushed = discord.sent().find((message) => message.chatId === discord.dmChatId(ownerUser))!;
    expect(pushed.text).toContain(text);
    expect(pushed.buttons.map((button) => button.decision)).toEqual(['approve', 'reject']);

    await discord.press(member, pushed, 'approve');
    await until(() => discord.pressAnswers().length === 1, 'the member’s answer');
    expect(discord.pressAnswers()).toEqual(['Only the owner decides on this; nothing changed.']);
    expect(discord.sent().find((message) => message.id === pushed.id)!.buttons).toHaveLength(2);
    expect(await listLessons(test.database, scout.id)).toEqual([]);

    await discord.press(ownerUser, pushed, 'reject');
    await until(() => discord.pressAnswers().length === 2, 'the owner’s answer');
    expect(discord.pressAnswers()[1]).toBe('Rejected by Olive.');
    await until(() => discord.edits().some((edit) => edit.id === pushed.id), 'the decision to replace the buttons');
    const decided = discord.sent().find((message) => message.id === pushed.id)!;
    expect(decided.buttons).toEqual([]);
    expect(decided.text).toBe(`${pushed.text}\n\n${discord.pressAnswers()[1]}`);
    expect(await listLessons(test.database, scout.id)).toEqual([]);
    // Each press was answered within Discord's window, for the presser alone.
    expect(discord.interactions().filter((interaction) => interaction.kind === 'button').map((interaction) => interaction.callbacks.map((callback) => callback.type))).toEqual([[4], [4]]);
  });
});
