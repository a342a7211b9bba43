/**
 * A local server that answers like Discord: its REST API (users/@me,
 * gateway/bot, the application's commands, channel messages sent and
 * edited, typing, direct-message channels, interaction callbacks and their
 * webhook follow-ups and @original edits, attachment downloads) and its
 * WebSocket gateway (HELLO, IDENTIFY → READY and GUILD_CREATE, heartbeats
 * acknowledged, MESSAGE_CREATE and INTERACTION_CREATE dispatched), so that
 * the real discord.js client builds real messages and interactions. With
 * Discord's failures on demand: a 429 with retry_after, 50007 for a person
 * who blocked the bot, 10062 for an interaction not answered within 3
 * seconds, 50035 for content over 2,000 characters. Test-only: excluded
 * from the build.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fakePicture, type Delivered, type FakePlatform, type PlatformMessage, type PlatformUser, type SendAttempt, type SentRecord } from '@roster/channels/conformance';
import { WebSocketServer, type WebSocket } from 'ws';
import { createDiscordAdapter, type DiscordAdapter, type DiscordAdapterOptions } from './discord-adapter.js';

const discordEpoch = 1_420_070_400_000n;
let increment = 0n;
/** A snowflake as Discord makes them: milliseconds since its epoch, then an increment. */
export function snowflake(at = Date.now()): string {
  increment = (increment + 1n) % 4096n;
  return String(((BigInt(at) - discordEpoch) << 22n) | (1n << 17n) | increment);
}

/** Discord's intents, as bits. */
const intents = { guilds: 1 << 0, guildMessages: 1 << 9, directMessages: 1 << 12, messageContent: 1 << 15 };
/** How long Discord waits for an interaction's first answer. */
const interactionWindowMs = 3000;
const textLimit = 2000;

export interface FakeDiscordInteraction {
  id: string;
  kind: 'command' | 'button';
  createdAt: number;
  /** The callbacks the bot posted for it, in order: their type (4 a reply, 5 deferred) and the status Discord answered. */
  callbacks: Array<{ type: number; status: number; at: number }>;
  /** Follow-ups and @original edits through its webhook, in order. */
  webhookCalls: Array<{ method: 'PATCH' | 'POST'; status: number; at: number }>;
}

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
  commands(): Array<{ name: string; options?: Array<{ name: string; type: number; required?: boolean }>; contexts?: number[] }>;
  /** The intents of the last IDENTIFY, or null before one. */
  identifiedIntents(): number | null;
  /** Gateway sessions identified so far. */
  sessions(): number;
  /** Gateway connections identified and open now. */
  connected(): number;
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
  /** Options for the adapter made against the fake (made when `adapter` is first read). */
  adapter?: Partial<Omit<DiscordAdapterOptions, 'token' | 'apiUrl'>>;
}

interface Connection {
  socket: WebSocket;
  identified: boolean;
  intents: number;
  sequence: number;
  /** Heartbeats the client sent, by their sequence, for whoever waits. */
  heartbeats: Set<(sequence: number | null) => void>;
}

interface Recorded {
  record: SentRecord;
  /** The message as the API gave it back (a button press carries it). */
  payload: Record<string, unknown>;
}

interface InteractionState extends FakeDiscordInteraction {
  token: string;
  channelId: string;
  /** What the bot's first answer is and whom it is for. */
  ephemeral: boolean;
  original: Recorded | null;
  /** Deferred: the first answer comes through PATCH @original. */
  deferred: boolean;
  userId: string;
}

export async function startFakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const token = options.token ?? 'MTAwMDAwMDAwMDAwMDAwMDAw.fake.roster-test-token';
  const applicationId = snowflake();
  const botUser = { id: applicationId, username: 'roster', global_name: null, discriminator: '0', avatar: null, bot: true, public_flags: 0, flags: 0 };
  const guildId = snowflake();
  const groupChannelId = snowflake();
  const secondChannelId = snowflake();
  const botRoleId = snowflake();
  const calls: string[] = [];
  const sent: Recorded[] = [];
  const edits: Array<{ id: string; text: string; at: number }> = [];
  const attempts: SendAttempt[] = [];
  const typing: string[] = [];
  const pressAnswers: string[] = [];
  const blocked = new Set<string>();
  const downloads: string[] = [];
  const files = new Map<string, { data: Uint8Array; mediaType: string }>();
  const interactions = new Map<string, InteractionState>();
  const dispatched = new Map<string, { type: string; data: Record<string, unknown> }>();
  let registered: ReturnType<FakeDiscord['commands']> = [];
  let rateLimitNext: number | null = null;
  let lastIntents: number | null = null;
  let sessions = 0;
  const connections = new Set<Connection>();

  const userOf = (user: PlatformUser) => ({ id: user.id, username: user.name.toLowerCase().replace(/[^a-z0-9_.]/g, ''), global_name: user.name, discriminator: '0', avatar: null, public_flags: 0, flags: 0 });
  const dmOf = (userId: string) => String(BigInt(userId) + 1_000_000n);
  const userOfDm = (channelId: string) => String(BigInt(channelId) - 1_000_000n);
  const isDm = (channelId: string) => channelId !== groupChannelId && channelId !== secondChannelId;
  const memberOf = (user: Record<string, unknown>) => ({ user, roles: [], joined_at: new Date(0).toISOString(), deaf: false, mute: false, flags: 0, permissions: '2248473465835073' });
  const dmChannel = (userId: string, user?: Record<string, unknown>) => ({ id: dmOf(userId), type: 1, last_message_id: null, flags: 0, recipients: [user ?? { id: userId, username: `user${userId.slice(-4)}`, global_name: null, discriminator: '0', avatar: null }] });
  const textChannel = (id: string, name: string, position: number) => ({ id, type: 0, guild_id: guildId, name, position, permission_overwrites: [], nsfw: false, topic: null, last_message_id: null, rate_limit_per_user: 0, parent_id: null, flags: 0 });
  const groupChannel = textChannel(groupChannelId, 'general', 0);
  const secondChannel = textChannel(secondChannelId, 'projects', 1);

  function messagePayload(fields: { id: string; channelId: string; author: Record<string, unknown>; content: string; components?: unknown[]; flags?: number }): Record<string, unknown> {
    return {
      id: fields.id,
      channel_id: fields.channelId,
      ...(isDm(fields.channelId) ? {} : { guild_id: guildId }),
      author: fields.author,
      content: fields.content,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      pinned: false,
      type: 0,
      flags: fields.flags ?? 0,
      components: fields.components ?? [],
    };
  }

  function buttonsOf(components: unknown): SentRecord['buttons'] {
    const rows = Array.isArray(components) ? (components as Array<{ components?: Array<{ custom_id?: string }> }>) : [];
    return rows
      .flatMap((row) => row.components ?? [])
      .flatMap((button) => {
        const match = /^roster:(approve|reject):(.+)$/.exec(button.custom_id ?? '');
        return match === null ? [] : [{ approvalId: match[2]!, decision: match[1] as 'approve' | 'reject' }];
      });
  }

  function record(channelId: string, body: Record<string, unknown>, extra: { visibleTo?: string } = {}): Recorded {
    const id = snowflake();
    const payload = messagePayload({ id, channelId, author: botUser, content: String(body.content ?? ''), components: (body.components as unknown[]) ?? [], flags: Number(body.flags ?? 0) });
    const entry: Recorded = {
      record: { id, chatId: channelId, text: String(body.content ?? ''), buttons: buttonsOf(body.components), at: Date.now(), ...(extra.visibleTo === undefined ? {} : { visibleTo: extra.visibleTo }) },
      payload,
    };
    sent.push(entry);
    attempts.push({ chatId: channelId, at: Date.now(), outcome: 'sent' });
    return entry;
  }

  type Answer = { status: number; body?: unknown; headers?: Record<string, string> };
  const error = (status: number, code: number, message: string): Answer => ({ status, body: { message, code } });
  const tooLong = (body: Record<string, unknown>): Answer | null =>
    typeof body.content === 'string' && body.content.length > textLimit
      ? { status: 400, body: { message: 'Invalid Form Body', code: 50035, errors: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] } } } }
      : null;

  /** The platform's refusals of a send, on demand. */
  function refusal(channelId: string): Answer | null {
    if (rateLimitNext !== null) {
      const seconds = rateLimitNext;
      rateLimitNext = null;
      attempts.push({ chatId: channelId, at: Date.now(), outcome: 'rate-limited' });
      return { status: 429, headers: { 'retry-after': String(seconds), 'x-ratelimit-scope': 'user' }, body: { message: 'You are being rate limited.', retry_after: seconds, global: false } };
    }
    if (isDm(channelId) && blocked.has(userOfDm(channelId))) {
      attempts.push({ chatId: channelId, at: Date.now(), outcome: 'blocked' });
      return error(403, 50007, 'Cannot send messages to this user');
    }
    return null;
  }

  function interactionAnswer(state: InteractionState, body: Record<string, unknown>, visible: boolean): Recorded | null {
    // A button's answer is what the presser is told; a command's is a message in the conversation.
    if (state.kind === 'button') {
      pressAnswers.push(String(body.content ?? ''));
      return null;
    }
    return record(state.channelId, body, visible ? {} : { visibleTo: state.userId });
  }

  async function route(method: string, path: string, query: URLSearchParams, headers: http.IncomingHttpHeaders, body: Record<string, unknown>): Promise<Answer> {
    const authorised = headers.authorization === `Bot ${token}`;
    const unauthorised = error(401, 0, '401: Unauthorized');
    let match: RegExpExecArray | null;
    // Interactions and their webhooks are reached with the interaction's token, not the bot's.
    if ((match = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(path)) !== null && method === 'POST') {
      const state = interactions.get(match[1]!);
      if (state === undefined || state.token !== match[2]) return error(404, 10062, 'Unknown interaction');
      const type = Number(body.type);
      const at = Date.now();
      const answer = (status: number) => state.callbacks.push({ type, status, at });
      if (at - state.createdAt > interactionWindowMs) {
        answer(404);
        return error(404, 10062, 'Unknown interaction');
      }
      if (state.callbacks.some((callback) => callback.status < 300)) {
        answer(400);
        return error(400, 40060, 'Interaction has already been acknowledged.');
      }
      const data = (body.data ?? {}) as Record<string, unknown>;
      const long = tooLong(data);
      if (long !== null) {
        answer(400);
        return long;
      }
      const ephemeral = (Number(data.flags ?? 0) & 64) !== 0;
      let message: Recorded | null = null;
      if (type === 4) message = interactionAnswer(state, data, !ephemeral);
      else if (type === 5) state.deferred = true;
      else {
        answer(400);
        return error(400, 50035, 'Invalid Form Body');
      }
      state.ephemeral = ephemeral;
      state.original = message;
      answer(query.get('with_response') === 'true' ? 200 : 204);
      if (query.get('with_response') !== 'true') return { status: 204 };
      return {
        status: 200,
        body: {
          interaction: { id: state.id, type: state.kind === 'command' ? 2 : 3, activity_instance_id: null, response_message_id: message?.record.id ?? null, response_message_loading: type === 5, response_message_ephemeral: ephemeral },
          resource: { type, ...(message === null ? {} : { message: message.payload }) },
        },
      };
    }
    if ((match = /^\/webhooks\/(\d+)\/([^/]+)(?:\/messages\/([^/]+))?$/.exec(path)) !== null) {
      const state = [...interactions.values()].find((candidate) => candidate.token === match![2]);
      if (match[1] !== applicationId || state === undefined) return error(404, 10015, 'Unknown Webhook');
      const long = tooLong(body);
      const call = (status: number) => state.webhookCalls.push({ method: method as 'PATCH' | 'POST', status, at: Date.now() });
      if (long !== null) {
        call(400);
        return long;
      }
      if (!state.callbacks.some((callback) => callback.status < 300)) {
        call(404);
        return error(404, 10015, 'Unknown Webhook');
      }
      if (method === 'PATCH' && match[3] !== undefined) {
        const original = match[3] === '@original' ? state.original : (sent.find((entry) => entry.record.id === match![3]) ?? null);
        if (original === null) {
          if (!(match[3] === '@original' && state.deferred)) {
            call(404);
            return error(404, 10008, 'Unknown Message');
          }
          // The deferred reply ("thinking…") becomes the answer.
          const made = interactionAnswer(state, body, !state.ephemeral);
          state.original = made;
          call(200);
          return { status: 200, body: made?.payload ?? messagePayload({ id: snowflake(), channelId: state.channelId, author: botUser, content: String(body.content ?? '') }) };
        }
        if (typeof body.content === 'string') {
          original.record.text = body.content;
          original.payload.content = body.content;
          edits.push({ id: original.record.id, text: body.content, at: Date.now() });
        }
        call(200);
        return { status: 200, body: original.payload };
      }
      if (method === 'POST' && match[3] === undefined) {
        const ephemeral = (Number(body.flags ?? 0) & 64) !== 0;
        const made = interactionAnswer(state, body, !ephemeral);
        call(200);
        return { status: 200, body: made?.payload ?? messagePayload({ id: snowflake(), channelId: state.channelId, author: botUser, content: String(body.content ?? '') }) };
      }
      return error(405, 0, '405: Method Not Allowed');
    }
    if (!authorised) return unauthorised;
    if (method === 'GET' && path === '/gateway/bot') {
      return { status: 200, body: { url: gatewayUrl, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } } };
    }
    if (method === 'GET' && path === '/users/@me') return { status: 200, body: botUser };
    if (method === 'GET' && path === '/applications/@me') {
      // GATEWAY_MESSAGE_CONTENT_LIMITED: the intent switched on, for a bot in fewer than 100 servers.
      return { status: 200, body: { id: applicationId, name: 'Roster', description: '', bot_public: true, bot_require_code_grant: false, verify_key: 'f'.repeat(64), flags: options.messageContentOff === true ? 0 : 1 << 18, bot: botUser } };
    }
    if ((match = /^\/applications\/(\d+)\/commands$/.exec(path)) !== null && method === 'PUT') {
      if (match[1] !== applicationId) return error(403, 50001, 'Missing Access');
      const list = Array.isArray(body) ? (body as Array<Record<string, unknown>>) : [];
      registered = list.map((command) => command as unknown as ReturnType<FakeDiscord['commands']>[number]);
      return {
        status: 200,
        body: list.map((command) => ({ id: snowflake(), application_id: applicationId, version: snowflake(), type: 1, default_member_permissions: null, nsfw: false, integration_types: [0], contexts: [0, 1], ...command })),
      };
    }
    if (method === 'POST' && path === '/users/@me/channels') {
      const recipient = String(body.recipient_id ?? '');
      if (!/^\d+$/.test(recipient)) return error(400, 50035, 'Invalid Form Body');
      return { status: 200, body: dmChannel(recipient) };
    }
    if ((match = /^\/channels\/(\d+)\/typing$/.exec(path)) !== null && method === 'POST') {
      const channelId = match[1]!;
      if (isDm(channelId) && blocked.has(userOfDm(channelId))) return error(403, 50007, 'Cannot send messages to this user');
      typing.push(channelId);
      return { status: 204 };
    }
    if ((match = /^\/channels\/(\d+)\/messages$/.exec(path)) !== null && method === 'POST') {
      const channelId = match[1]!;
      const refused = refusal(channelId);
      if (refused !== null) return refused;
      const long = tooLong(body);
      if (long !== null) return long;
      if (typeof body.content !== 'string' || body.content === '') return error(400, 50006, 'Cannot send an empty message');
      return { status: 200, body: record(channelId, body).payload };
    }
    if ((match = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path)) !== null && method === 'PATCH') {
      const entry = sent.find((candidate) => candidate.record.id === match![2] && candidate.record.chatId === match![1]);
      if (entry === undefined) return error(404, 10008, 'Unknown Message');
      const long = tooLong(body);
      if (long !== null) return long;
      if (typeof body.content === 'string') {
        entry.record.text = body.content;
        entry.payload.content = body.content;
        edits.push({ id: entry.record.id, text: body.content, at: Date.now() });
      }
      if (Array.isArray(body.components)) {
        entry.record.buttons = buttonsOf(body.components);
        entry.payload.components = body.components;
      }
      return { status: 200, body: entry.payload };
    }
    return error(404, 0, '404: Not Found');
  }

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://fake');
      // An attachment's bytes, at the address the message gave (Discord's CDN needs no token).
      const attachment = /^\/attachments\/(\d+)\/(\d+)\/([^/]+)$/.exec(url.pathname);
      if (attachment !== null) {
        const file = files.get(attachment[2]!);
        if (file === undefined) {
          response.writeHead(404).end();
          return;
        }
        downloads.push(url.pathname);
        response.writeHead(200, { 'content-type': file.mediaType, 'content-length': String(file.data.byteLength) });
        response.end(Buffer.from(file.data));
        return;
      }
      const reply = (answer: Answer) => {
        if (answer.body === undefined) {
          response.writeHead(answer.status, answer.headers ?? {}).end();
          return;
        }
        response.writeHead(answer.status, { 'content-type': 'application/json', ...(answer.headers ?? {}) });
        response.end(JSON.stringify(answer.body));
      };
      const api = /^\/api\/v10(\/.*)$/.exec(url.pathname);
      if (api === null) return reply(error(404, 0, '404: Not Found'));
      // Discord reads path segments percent-decoded (`%40original` is `@original`).
      const path = decodeURIComponent(api[1]!);
      calls.push(`${request.method} ${path.replace(/\/\d{5,}/g, '/:id').replace(/(\/(?:interactions|webhooks)\/:id\/)[^/]+/, '$1:token')}`);
      let body: Record<string, unknown> = {};
      const raw = Buffer.concat(chunks).toString('utf8');
      try {
        body = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
      } catch {
        // A multipart body (files) is not sent by Roster.
        return reply(error(400, 50109, 'The request body contains invalid JSON.'));
      }
      route(request.method ?? 'GET', path, url.searchParams, request.headers, body).then(reply, () => reply(error(500, 0, '500: Internal Server Error')));
    });
  });

  // The gateway: the same port, upgraded to a WebSocket.
  const gateway = new WebSocketServer({ server });
  gateway.on('connection', (socket) => {
    const connection: Connection = { socket, identified: false, intents: 0, sequence: 0, heartbeats: new Set() };
    connections.add(connection);
    socket.on('close', () => connections.delete(connection));
    socket.send(JSON.stringify({ op: 10, d: { heartbeat_interval: 41_250 }, s: null, t: null }));
    socket.on('message', (data) => {
      let payload: { op?: number; d?: unknown };
      try {
        payload = JSON.parse(String(data)) as { op?: number; d?: unknown };
      } catch {
        socket.close(4002, 'Error while decoding payload.');
        return;
      }
      switch (payload.op) {
        case 1: {
          socket.send(JSON.stringify({ op: 11, d: null, s: null, t: null }));
          for (const waiter of connection.heartbeats) waiter(typeof payload.d === 'number' ? payload.d : null);
          return;
        }
        case 2: {
          const identify = payload.d as { token?: string; intents?: number };
          if (identify.token !== token && identify.token !== `Bot ${token}`) {
            socket.close(4004, 'Authentication failed.');
            return;
          }
          if (options.messageContentOff === true && (Number(identify.intents ?? 0) & intents.messageContent) !== 0) {
            socket.close(4014, 'Disallowed intent(s).');
            return;
          }
          connection.identified = true;
          connection.intents = Number(identify.intents ?? 0);
          lastIntents = connection.intents;
          sessions += 1;
          dispatch(connection, 'READY', {
            v: 10,
            user: botUser,
            guilds: [{ id: guildId, unavailable: true }],
            session_id: randomBytes(16).toString('hex'),
            resume_gateway_url: gatewayUrl,
            shard: [0, 1],
            application: { id: applicationId, flags: 0 },
            private_channels: [],
            relationships: [],
            presences: [],
            guild_join_requests: [],
            user_settings: {},
            geo_ordered_rtc_regions: [],
          });
          if ((connection.intents & intents.guilds) !== 0) dispatch(connection, 'GUILD_CREATE', guildPayload());
          return;
        }
        case 6:
          // No resuming here: the client identifies anew.
          socket.send(JSON.stringify({ op: 9, d: false, s: null, t: null }));
          return;
        default:
          return;
      }
    });
  });

  function guildPayload(): Record<string, unknown> {
    return {
      id: guildId,
      name: 'The team',
      icon: null,
      splash: null,
      discovery_splash: null,
      owner_id: '1',
      afk_channel_id: null,
      afk_timeout: 300,
      verification_level: 0,
      default_message_notifications: 0,
      explicit_content_filter: 0,
      roles: [
        { id: guildId, name: '@everyone', color: 0, hoist: false, icon: null, unicode_emoji: null, position: 0, permissions: '1024', managed: false, mentionable: false, flags: 0 },
        { id: botRoleId, name: 'roster', color: 0, hoist: false, icon: null, unicode_emoji: null, position: 1, permissions: '274877975552', managed: true, mentionable: false, flags: 0, tags: { bot_id: botUser.id } },
      ],
      emojis: [],
      features: [],
      mfa_level: 0,
      application_id: null,
      system_channel_id: null,
      system_channel_flags: 0,
      rules_channel_id: null,
      vanity_url_code: null,
      description: null,
      banner: null,
      premium_tier: 0,
      preferred_locale: 'en-US',
      public_updates_channel_id: null,
      nsfw_level: 0,
      premium_progress_bar_enabled: false,
      joined_at: new Date().toISOString(),
      large: false,
      unavailable: false,
      member_count: 2,
      voice_states: [],
      members: [{ ...memberOf(botUser), roles: [botRoleId] }],
      channels: [groupChannel, secondChannel],
      threads: [],
      presences: [],
      stage_instances: [],
      guild_scheduled_events: [],
      stickers: [],
      soundboard_sounds: [],
    };
  }

  function dispatch(connection: Connection, type: string, data: Record<string, unknown>): number {
    connection.sequence += 1;
    connection.socket.send(JSON.stringify({ op: 0, t: type, s: connection.sequence, d: data }));
    return connection.sequence;
  }

  /** The session events go to: the newest identified connection. */
  function session(): Connection {
    const identified = [...connections].filter((connection) => connection.identified);
    const last = identified.at(-1);
    if (last === undefined) throw new Error('no bot is connected to the fake Discord gateway');
    return last;
  }

  /**
   * Resolve once the client has handled the event with this sequence: ask it
   * for a heartbeat (op 1) until the sequence it reports reaches it. The
   * client handles gateway messages in order, so that event was handed on.
   */
  async function handled(connection: Connection, sequence: number): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const reported = await new Promise<number | null>((resolve) => {
        const timer = setTimeout(() => done(null), 200);
        const done = (value: number | null) => {
          clearTimeout(timer);
          connection.heartbeats.delete(done);
          resolve(value);
        };
        connection.heartbeats.add(done);
        connection.socket.send(JSON.stringify({ op: 1, d: null, s: null, t: null }));
      });
      if (reported !== null && reported >= sequence) return;
    }
    throw new Error(`the bot did not take gateway event ${sequence} within 10 s`);
  }

  /** Send an event to the bot as the gateway would (unless its intents keep it away); resolves once handled. */
  async function send(type: string, data: Record<string, unknown>, needs: number): Promise<void> {
    const connection = session();
    if ((connection.intents & needs) !== needs) return;
    await handled(connection, dispatch(connection, type, data));
  }

  function keepFile(data: Uint8Array, mediaType: string, name: string, channelId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    const id = snowflake();
    files.set(id, { data, mediaType });
    const url = `${base}/attachments/${channelId}/${id}/${encodeURIComponent(name)}`;
    return { id, filename: name, size: data.byteLength, url, proxy_url: url, content_type: mediaType, ...extra };
  }

  function messageEvent(message: FakeDiscordMessage): { data: Record<string, unknown>; channelId: string } {
    if (message.channelId !== undefined && (message.chat === 'dm' || isDm(message.channelId))) throw new Error(`${message.channelId} is not a channel of the fake server`);
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
      ...messagePayload({ id, channelId, author, content }),
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
      data.message_reference = { type: 0, message_id: message.replyTo.id, channel_id: channelId, ...(message.chat === 'group' ? { guild_id: guildId } : {}) };
      data.referenced_message = messagePayload({ id: message.replyTo.id, channelId, author: repliedAuthor, content: 'an earlier message' });
      // A reply pings the author of the message it answers (the client's default).
      mentions.push(repliedAuthor);
    }
    // Without the Message Content intent, Discord leaves the words out of server messages that do not mention the bot.
    const connection = [...connections].filter((candidate) => candidate.identified).at(-1);
    if (connection !== undefined && message.chat === 'group' && (connection.intents & intents.messageContent) === 0 && !mentions.some((user) => (user as { id: string }).id === botUser.id)) {
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
      channel: dm ? dmChannel(from.id, user) : groupChannel,
      token: interactionToken,
      version: 1,
      locale: 'en-US',
      app_permissions: '2248473465835073',
      entitlements: [],
      authorizing_integration_owners: dm ? { '1': from.id } : { '0': guildId },
      context: dm ? 1 : 0,
      attachment_size_limit: 10 * 1024 * 1024,
      ...(dm ? { user } : { guild_id: guildId, guild_locale: 'en-US', guild: { id: guildId, locale: 'en-US', features: [] }, member: memberOf(user) }),
      ...(message === undefined ? {} : { message }),
    };
    return { ...state, payload };
  }

  async function slash(from: PlatformUser, chat: 'dm' | 'group', name: string, values: Record<string, string>): Promise<Delivered & { interactionId: string }> {
    const command = registered.find((candidate) => candidate.name === name);
    if (command === undefined) throw new Error(`/${name} is not a registered command of the application`);
    const options = (command.options ?? []).filter((option) => values[option.name] !== undefined).map((option) => ({ name: option.name, type: option.type, value: values[option.name] }));
    for (const option of command.options ?? []) if (option.required === true && values[option.name] === undefined) throw new Error(`/${name} needs ${option.name}`);
    const channelId = chat === 'dm' ? dmOf(from.id) : groupChannelId;
    const event = interactionEvent('command', from, channelId, { id: snowflake(), name, type: 1, ...(options.length === 0 ? {} : { options }) });
    dispatched.set(`interaction:${event.id}`, { type: 'INTERACTION_CREATE', data: event.payload });
    await send('INTERACTION_CREATE', event.payload, 0);
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
    calls,
    groupChatId: groupChannelId,
    commands: () => structuredClone(registered),
    identifiedIntents: () => lastIntents,
    sessions: () => sessions,
    connected: () => [...connections].filter((connection) => connection.identified).length,
    interactions: () => [...interactions.values()].map((state) => ({ id: state.id, kind: state.kind, createdAt: state.createdAt, callbacks: [...state.callbacks], webhookCalls: [...state.webhookCalls] })),
    windowClosed: (id) => {
      const state = interactions.get(id);
      return state !== undefined && Date.now() - state.createdAt > interactionWindowMs;
    },
    edits: () => edits.map((edit) => ({ ...edit })),
    downloads: () => [...downloads],
    user: (n) => ({ id: String(300_000_000_000_000_000n + BigInt(n) * 10_000_000n), name: `Dana ${n}` }),
    dmChatId: (user) => dmOf(user.id),
    async deliver(message) {
      const { data, channelId } = messageEvent(message);
      dispatched.set(`message:${String(data.id)}`, { type: 'MESSAGE_CREATE', data });
      await send('MESSAGE_CREATE', data, message.chat === 'dm' ? intents.directMessages : intents.guildMessages);
      return { chatId: channelId, messageId: String(data.id), deliveryId: `message:${String(data.id)}` };
    },
    async command(from, chat, words) {
      const [name = '', ...rest] = words.trim().split(/\s+/);
      const command = registered.find((candidate) => candidate.name === name);
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
    dispatch: (type, data) => send(type, data as Record<string, unknown>, 0),
    async redeliver(delivered) {
      const event = dispatched.get(delivered.deliveryId);
      if (event === undefined) throw new Error(`no delivery ${delivered.deliveryId}`);
      // After a reconnect, Discord replays what the session had not confirmed: the same event, again.
      await send(event.type, event.data, 0);
    },
    async press(from, sentRecord, decision) {
      const entry = sent.find((candidate) => candidate.record.id === sentRecord.id);
      if (entry === undefined) throw new Error(`no message ${sentRecord.id}`);
      const approvalId = sentRecord.buttons[0]?.approvalId ?? '';
      const event = interactionEvent('button', from, entry.record.chatId, { custom_id: `roster:${decision}:${approvalId}`, component_type: 2 }, entry.payload);
      await send('INTERACTION_CREATE', event.payload, 0);
    },
    pressAnswers: () => [...pressAnswers],
    sent: () => sent.map((entry) => ({ ...entry.record, buttons: [...entry.record.buttons] })),
    attempts: () => [...attempts],
    typing: () => [...typing],
    rateLimitNextSend(seconds) {
      rateLimitNext = seconds;
    },
    block(user) {
      blocked.add(user.id);
    },
    unblock(user) {
      blocked.delete(user.id);
    },
    async close() {
      if (adapter !== null) await adapter.stop().catch(() => undefined);
      for (const connection of connections) connection.socket.terminate();
      gateway.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
