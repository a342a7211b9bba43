/**
 * A local server that answers like Discord: its REST API
 * (fake-discord-rest.ts) and its WebSocket gateway, sharded as Discord
 * shards (fake-discord-gateway.ts), so that the real discord.js client
 * builds real messages and interactions. With Discord's failures on demand:
 * a 429 with retry_after, 50007 for a person who blocked the bot, 10062 for
 * an interaction not answered within 3 seconds, 50035 for content over
 * 2,000 characters, 4010 for a second session on one shard. Test-only:
 * excluded from the build.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { fakePicture, type Delivered, type FakePlatform, type PlatformMessage, type PlatformUser } from '@roster/channels/testing';
import { createDiscordAdapter, type DiscordAdapter, type DiscordAdapterOptions } from './discord-adapter.js';
import { startGateway } from './fake-discord-gateway.js';
import { createRestServer } from './fake-discord-rest.js';
import { createWorld, interactionWindowMs, intents, snowflake, type FakeDiscordInteraction, type InteractionState, type RegisteredCommand } from './fake-discord-world.js';

export { snowflake, type FakeDiscordInteraction } from './fake-discord-world.js';

export interface FakeDiscord extends FakePlatform {
  readonly adapter: DiscordAdapter;
  /** The REST API base the adapter is given (DISCORD_API_URL). */
  readonly apiUrl: string;
  readonly token: string;
  readonly applicationId: string;
  readonly botId: string;
  readonly guildId: string;
  /** A second text channel of the server (#projects), beside `groupChatId` (#general). */
  readonly secondChannelId: string;
  /** Every REST call, as `METHOD /route` with ids and tokens in place (`POST /channels/:id/messages`). */
  readonly calls: string[];
  /** The slash commands the application registered (the last PUT). */
  commands(): RegisteredCommand[];
  /** The intents of the last IDENTIFY, or null before one. */
  identifiedIntents(): number | null;
  /** Gateway sessions identified so far. */
  sessions(): number;
  /** Gateway connections identified and open now. */
  connected(): number;
  /** Drop the gateway connection that receives direct messages, as a network fault does; resolves once it is closed. The client may resume its session. */
  dropConnection(): Promise<void>;
  /** The servers: each one's id, its #general, and the shard it falls on by Discord's recommended count. */
  readonly guilds: ReadonlyArray<{ id: string; channelId: string; shard: number }>;
  /** The shards connected now, as `id/count`, sorted (`['0/2', '1/2']`). */
  shards(): string[];
  /** IDENTIFYs refused because a session held their shard already, as `id/count`: two receivers of one shard. */
  refusedIdentifies(): string[];
  /** Every interaction dispatched, with what the bot did with it. */
  interactions(): FakeDiscordInteraction[];
  /** An interaction's first answer can no longer be given (its 3 seconds are over). */
  windowClosed(interactionId: string): boolean;
  /** Every edit of a sent message the platform accepted, in order. */
  edits(): Array<{ id: string; text: string; at: number }>;
  /** The attachment paths the bot downloaded, in order. */
  downloads(): string[];
  /** Deliver a message as a person, or as another bot (`fromOtherBot`); resolves once the bot took it. */
  deliver(message: FakeDiscordMessage): Promise<Delivered>;
  /** Send any gateway event, as it stands (hostile input); resolves once the bot took it. */
  dispatch(type: string, data: unknown): Promise<void>;
  /** Run a slash command as this person; resolves once the bot took it. */
  slash(from: PlatformUser, chat: 'dm' | 'group', name: string, options: Record<string, string>): Promise<Delivered & { interactionId: string }>;
}

/** A message the fake delivers: the harness's, with what only Discord has. */
export interface FakeDiscordMessage extends PlatformMessage {
  /** The server channel a server message goes to (one of the server's); #general when absent. */
  channelId?: string;
  /** The author is another bot, not a person (`author.bot`): Roster must not take it. */
  fromOtherBot?: boolean;
}

export interface FakeDiscordOptions {
  token?: string;
  /** The Message Content intent is not switched on for the bot: an IDENTIFY asking for it is closed with 4014, as Discord does. */
  messageContentOff?: boolean;
  /** The shard count gateway/bot recommends (default 1). */
  shards?: number;
  /** How many servers the bot is in (default 1): the n-th falls on shard n % `shards`; the first has #general and #projects, the others #general. */
  guilds?: number;
  /** Options for the adapter made against the fake (made when `adapter` is first read). */
  adapter?: Partial<Omit<DiscordAdapterOptions, 'token' | 'apiUrl'>>;
}

export async function startFakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const shards = options.shards ?? 1;
  const world = createWorld({ token: options.token ?? 'MTAwMDAwMDAwMDAwMDAwMDAw.fake.roster-test-token', guilds: options.guilds ?? 1, shards, messageContentOff: options.messageContentOff === true });
  const { token, applicationId, botUser, interactions, dispatched, sent, userOf, dmOf, isDm, guildOf, memberOf, dmChannel, textChannel } = world;
  const firstGuild = world.guilds[0]!;
  const guildId = firstGuild.id;
  const groupChannelId = firstGuild.channels[0]!.id;
  const secondChannelId = firstGuild.channels[1]!.id;
  const server = createRestServer(world, () => gatewayUrl);
  const gateway = startGateway(server, world, () => gatewayUrl);
  const send = (type: string, data: Record<string, unknown>, needs: number, channelId: string) => gateway.send(type, data, needs, guildOf(channelId)?.id ?? null);

  function keepFile(data: Uint8Array, mediaType: string, name: string, channelId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    const id = snowflake();
    world.files.set(id, { data, mediaType });
    const url = `${base}/attachments/${channelId}/${id}/${encodeURIComponent(name)}`;
    return { id, filename: name, size: data.byteLength, url, proxy_url: url, content_type: mediaType, ...extra };
  }

  function messageEvent(message: FakeDiscordMessage): { data: Record<string, unknown>; channelId: string } {
    if (message.channelId !== undefined && (message.chat === 'dm' || isDm(message.channelId))) throw new Error(`${message.channelId} is not a channel of the fake servers`);
    const channelId = message.chat === 'dm' ? dmOf(message.from.id) : (message.channelId ?? groupChannelId);
    const id = snowflake();
    let content = message.text;
    const mentions: unknown[] = [];
    if (message.mentionBot === true) {
      content = `<@${botUser.id}> ${content}`;
      mentions.push(botUser);
    }
    const author = { ...userOf(message.from), ...(message.fromOtherBot === true ? { bot: true } : {}) };
    const data: Record<string, unknown> = {
      ...world.messagePayload({ id, channelId, author, content }),
      mentions,
      channel_type: message.chat === 'dm' ? 1 : 0,
      nonce: id,
      ...(message.chat === 'group' ? { member: { roles: [], joined_at: new Date(0).toISOString(), deaf: false, mute: false, flags: 0 } } : {}),
    };
    const attachment = message.attachment ?? (message.image === true ? { kind: 'image' as const, data: fakePicture, mediaType: 'image/png', name: 'picture.png' } : undefined);
    if (attachment !== undefined) {
      const name = attachment.name ?? (attachment.kind === 'voice' ? 'voice-message.ogg' : attachment.kind === 'image' ? 'image.png' : 'file.bin');
      // A voice message is an audio attachment with a duration and a waveform, on a message flagged as one.
      const voice = attachment.kind === 'voice' ? { duration_secs: 3, waveform: Buffer.from([0, 64, 128, 64, 0]).toString('base64'), flags: 0 } : {};
      data.attachments = [keepFile(attachment.data, attachment.mediaType, name, channelId, voice)];
      if (attachment.kind === 'voice') data.flags = 1 << 13;
    }
    if (message.replyTo !== undefined) {
      const repliedAuthor = message.replyTo.fromBot ? botUser : author;
      data.type = 19;
      data.message_reference = { type: 0, message_id: message.replyTo.id, channel_id: channelId, ...(message.chat === 'group' ? { guild_id: guildOf(channelId)!.id } : {}) };
      data.referenced_message = world.messagePayload({ id: message.replyTo.id, channelId, author: repliedAuthor, content: 'an earlier message' });
      // A reply pings the author of the message it answers (the client's default).
      mentions.push(repliedAuthor);
    }
    // Without the Message Content intent, Discord leaves the words out of server messages that do not mention the bot.
    const sessionIntents = gateway.intentsFor(guildOf(channelId)?.id ?? null);
    if (sessionIntents !== null && message.chat === 'group' && (sessionIntents & intents.messageContent) === 0 && !mentions.some((user) => (user as { id: string }).id === botUser.id)) {
      data.content = '';
      data.attachments = [];
    }
    return { data, channelId };
  }

  function interactionEvent(kind: 'command' | 'button', from: PlatformUser, channelId: string, data: Record<string, unknown>, message?: Record<string, unknown>): InteractionState & { payload: Record<string, unknown> } {
    const id = snowflake();
    const interactionToken = `aW50ZXJhY3Rpb24${randomBytes(24).toString('base64url')}`;
    const user = userOf(from);
    const dm = isDm(channelId);
    const state: InteractionState = {
      id,
      kind,
      createdAt: Date.now(),
      callbacks: [],
      webhookCalls: [],
      token: interactionToken,
      channelId,
      ephemeral: false,
      original: null,
      deferred: false,
      userId: from.id,
    };
    interactions.set(id, state);
    const payload: Record<string, unknown> = {
      id,
      application_id: applicationId,
      type: kind === 'command' ? 2 : 3,
      data,
      channel_id: channelId,
      channel: dm ? dmChannel(from.id, user) : textChannel(guildOf(channelId)!, guildOf(channelId)!.channels.findIndex((channel) => channel.id === channelId)),
      token: interactionToken,
      version: 1,
      locale: 'en-US',
      app_permissions: '2248473465835073',
      entitlements: [],
      authorizing_integration_owners: dm ? { '1': from.id } : { '0': guildOf(channelId)!.id },
      context: dm ? 1 : 0,
      attachment_size_limit: 10 * 1024 * 1024,
      ...(dm ? { user } : { guild_id: guildOf(channelId)!.id, guild_locale: 'en-US', guild: { id: guildOf(channelId)!.id, locale: 'en-US', features: [] }, member: memberOf(user) }),
      ...(message === undefined ? {} : { message }),
    };
    return { ...state, payload };
  }

  async function slash(from: PlatformUser, chat: 'dm' | 'group', name: string, values: Record<string, string>): Promise<Delivered & { interactionId: string }> {
    const command = world.registered.find((candidate) => candidate.name === name);
    if (command === undefined) throw new Error(`/${name} is not a registered command of the application`);
    const options = (command.options ?? []).filter((option) => values[option.name] !== undefined).map((option) => ({ name: option.name, type: option.type, value: values[option.name] }));
    for (const option of command.options ?? []) if (option.required === true && values[option.name] === undefined) throw new Error(`/${name} needs ${option.name}`);
    const channelId = chat === 'dm' ? dmOf(from.id) : groupChannelId;
    const event = interactionEvent('command', from, channelId, { id: snowflake(), name, type: 1, ...(options.length === 0 ? {} : { options }) });
    dispatched.set(`interaction:${event.id}`, { type: 'INTERACTION_CREATE', data: event.payload, guildId: guildOf(channelId)?.id ?? null });
    await send('INTERACTION_CREATE', event.payload, 0, channelId);
    return { chatId: channelId, messageId: `command:${event.id}`, deliveryId: `interaction:${event.id}`, interactionId: event.id };
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;
  const gatewayUrl = `ws://127.0.0.1:${port}`;
  const apiUrl = `${base}/api`;
  let adapter: DiscordAdapter | null = null;

  const fake: FakeDiscord = {
    get adapter() {
      adapter ??= createDiscordAdapter({ ...options.adapter, token, apiUrl });
      return adapter;
    },
    apiUrl,
    token,
    applicationId,
    botId: botUser.id,
    guildId,
    secondChannelId,
    calls: world.calls,
    groupChatId: groupChannelId,
    commands: () => structuredClone(world.registered),
    identifiedIntents: gateway.lastIntents,
    sessions: gateway.sessions,
    connected: gateway.connected,
    dropConnection: () => gateway.drop(),
    guilds: world.guilds.map((guild) => ({ id: guild.id, channelId: guild.channels[0]!.id, shard: Number((BigInt(guild.id) >> 22n) % BigInt(shards)) })),
    shards: gateway.shards,
    refusedIdentifies: gateway.refusals,
    interactions: () => [...interactions.values()].map((state) => ({ id: state.id, kind: state.kind, createdAt: state.createdAt, callbacks: [...state.callbacks], webhookCalls: [...state.webhookCalls] })),
    windowClosed: (id) => {
      const state = interactions.get(id);
      return state !== undefined && Date.now() - state.createdAt > interactionWindowMs;
    },
    edits: () => world.edits.map((edit) => ({ ...edit })),
    downloads: () => [...world.downloads],
    user: (n) => ({ id: String(300_000_000_000_000_000n + BigInt(n) * 10_000_000n), name: `Dana ${n}` }),
    dmChatId: (user) => dmOf(user.id),
    async deliver(message) {
      const { data, channelId } = messageEvent(message);
      dispatched.set(`message:${String(data.id)}`, { type: 'MESSAGE_CREATE', data, guildId: guildOf(channelId)?.id ?? null });
      await send('MESSAGE_CREATE', data, message.chat === 'dm' ? intents.directMessages : intents.guildMessages, channelId);
      return { chatId: channelId, messageId: String(data.id), deliveryId: `message:${String(data.id)}` };
    },
    async command(from, chat, words) {
      const [name = '', ...rest] = words.trim().split(/\s+/);
      const command = world.registered.find((candidate) => candidate.name === name);
      if (command === undefined) throw new Error(`/${name} is not a registered command of the application`);
      // The words go into the command's options as a person fills them in: one word each, the last option takes the rest.
      const values: Record<string, string> = {};
      const options = command.options ?? [];
      options.forEach((option, index) => {
        const value = index === options.length - 1 ? rest.splice(0).join(' ') : rest.shift();
        if (value !== undefined && value !== '') values[option.name] = value;
      });
      return slash(from, chat, name, values);
    },
    slash,
    dispatch: (type, data) => gateway.send(type, data as Record<string, unknown>, 0, null),
    async redeliver(delivered) {
      const event = dispatched.get(delivered.deliveryId);
      if (event === undefined) throw new Error(`no delivery ${delivered.deliveryId}`);
      // After a reconnect, Discord replays what the session had not confirmed: the same event, again.
      await gateway.send(event.type, event.data, 0, event.guildId);
    },
    async press(from, sentRecord, decision) {
      const entry = sent.find((candidate) => candidate.record.id === sentRecord.id);
      if (entry === undefined) throw new Error(`no message ${sentRecord.id}`);
      const approvalId = sentRecord.buttons[0]?.approvalId ?? '';
      const event = interactionEvent('button', from, entry.record.chatId, { custom_id: `roster:${decision}:${approvalId}`, component_type: 2 }, entry.payload);
      await send('INTERACTION_CREATE', event.payload, 0, entry.record.chatId);
    },
    pressAnswers: () => [...world.pressAnswers],
    sent: () => sent.map((entry) => ({ ...entry.record, buttons: [...entry.record.buttons] })),
    attempts: () => [...world.attempts],
    typing: () => [...world.typing],
    rateLimitNextSend(seconds) {
      world.rateLimitNext = seconds;
    },
    block(user) {
      world.blocked.add(user.id);
    },
    unblock(user) {
      world.blocked.delete(user.id);
    },
    async close() {
      if (adapter !== null) await adapter.stop().catch(() => undefined);
      gateway.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
