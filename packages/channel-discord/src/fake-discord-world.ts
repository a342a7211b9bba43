/**
 * The fake Discord's world, for tests: the bot, its servers (each with its
 * text channels, on the shard Discord's rule gives it), people's
 * direct-message channels, what the bot sent and what it was refused, and
 * the payloads Discord builds of them. Test-only: excluded from the build.
 */
import type { PlatformUser, SendAttempt, SentRecord } from '@roster/channels/testing';

const discordEpoch = 1_420_070_400_000n;
let increment = 0n;
/** A snowflake as Discord makes them: milliseconds since its epoch, then an increment. */
export function snowflake(at = Date.now()): string {
  increment = (increment + 1n) % 4096n;
  return String(((BigInt(at) - discordEpoch) << 22n) | (1n << 17n) | increment);
}

/** The shard a server's events go to, by Discord's rule: `(guild_id >> 22) % num_shards`. */
export function shardOf(guildId: string, count: number): number {
  return Number((BigInt(guildId) >> 22n) % BigInt(count));
}

/** Discord's intents, as bits. */
export const intents = { guilds: 1 << 0, guildMessages: 1 << 9, directMessages: 1 << 12, messageContent: 1 << 15 };
/** How long Discord waits for an interaction's first answer. */
export const interactionWindowMs = 3000;
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

export interface Recorded {
  record: SentRecord;
  /** The message as the API gave it back (a button press carries it). */
  payload: Record<string, unknown>;
}

export interface InteractionState extends FakeDiscordInteraction {
  token: string;
  channelId: string;
  /** What the bot's first answer is and whom it is for. */
  ephemeral: boolean;
  original: Recorded | null;
  /** Deferred: the first answer comes through PATCH @original. */
  deferred: boolean;
  userId: string;
}

/** A server of the fake: its id, its role for the bot, its text channels (the first is #general). */
export interface FakeGuild {
  id: string;
  botRoleId: string;
  channels: Array<{ id: string; name: string }>;
}

export type Answer = { status: number; body?: unknown; headers?: Record<string, string> };
export type RegisteredCommand = { name: string; options?: Array<{ name: string; type: number; required?: boolean }>; contexts?: number[] };

export type World = ReturnType<typeof createWorld>;

/**
 * The world of one fake Discord: `guilds` servers, the n-th made so that it
 * falls on shard n % `shards` (of Discord's recommended count), the first
 * with #general and #projects, the others with #general.
 */
export function createWorld(options: { token: string; guilds: number; shards: number; messageContentOff: boolean }) {
  const applicationId = snowflake();
  const botUser = { id: applicationId, username: 'roster', global_name: null, discriminator: '0', avatar: null, bot: true, public_flags: 0, flags: 0 };
  const now = Date.now();
  const guilds: FakeGuild[] = Array.from({ length: options.guilds }, (_, index) => {
    // A moment whose distance from Discord's epoch puts the server on shard index % shards.
    const offset = Number((BigInt(now) - discordEpoch) % BigInt(options.shards));
    const at = now - offset + (index % options.shards) - options.shards * (index + 1);
    const channels = [{ id: snowflake(), name: 'general' }, ...(index === 0 ? [{ id: snowflake(), name: 'projects' }] : [])];
    return { id: snowflake(at), botRoleId: snowflake(), channels };
  });
  const data = {
    token: options.token,
    options,
    applicationId,
    botUser,
    guilds,
    calls: [] as string[],
    sent: [] as Recorded[],
    edits: [] as Array<{ id: string; text: string; at: number }>,
    attempts: [] as SendAttempt[],
    typing: [] as string[],
    pressAnswers: [] as string[],
    blocked: new Set<string>(),
    downloads: [] as string[],
    files: new Map<string, { data: Uint8Array; mediaType: string }>(),
    interactions: new Map<string, InteractionState>(),
    dispatched: new Map<string, { type: string; data: Record<string, unknown>; guildId: string | null }>(),
    registered: [] as RegisteredCommand[],
    rateLimitNext: null as number | null,
  };

  const userOf = (user: PlatformUser) => ({ id: user.id, username: user.name.toLowerCase().replace(/[^a-z0-9_.]/g, ''), global_name: user.name, discriminator: '0', avatar: null, public_flags: 0, flags: 0 });
  const dmOf = (userId: string) => String(BigInt(userId) + 1_000_000n);
  const userOfDm = (channelId: string) => String(BigInt(channelId) - 1_000_000n);
  /** The server a channel belongs to, or null for a direct-message channel. */
  const guildOf = (channelId: string): FakeGuild | null => guilds.find((guild) => guild.channels.some((channel) => channel.id === channelId)) ?? null;
  const isDm = (channelId: string) => guildOf(channelId) === null;
  const memberOf = (user: Record<string, unknown>) => ({ user, roles: [], joined_at: new Date(0).toISOString(), deaf: false, mute: false, flags: 0, permissions: '2248473465835073' });
  const dmChannel = (userId: string, user?: Record<string, unknown>) => ({ id: dmOf(userId), type: 1, last_message_id: null, flags: 0, recipients: [user ?? { id: userId, username: `user${userId.slice(-4)}`, global_name: null, discriminator: '0', avatar: null }] });
  const textChannel = (guild: FakeGuild, index: number) => {
    const { id, name } = guild.channels[index]!;
    return { id, type: 0, guild_id: guild.id, name, position: index, permission_overwrites: [], nsfw: false, topic: null, last_message_id: null, rate_limit_per_user: 0, parent_id: null, flags: 0 };
  };

  function messagePayload(fields: { id: string; channelId: string; author: Record<string, unknown>; content: string; components?: unknown[]; flags?: number }): Record<string, unknown> {
    return {
      id: fields.id,
      channel_id: fields.channelId,
      ...(guildOf(fields.channelId) === null ? {} : { guild_id: guildOf(fields.channelId)!.id }),
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
    data.sent.push(entry);
    data.attempts.push({ chatId: channelId, at: Date.now(), outcome: 'sent' });
    return entry;
  }

  const error = (status: number, code: number, message: string): Answer => ({ status, body: { message, code } });
  const tooLong = (body: Record<string, unknown>): Answer | null =>
    typeof body.content === 'string' && body.content.length > textLimit
      ? { status: 400, body: { message: 'Invalid Form Body', code: 50035, errors: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] } } } }
      : null;

  /** The platform's refusals of a send, on demand. */
  function refusal(channelId: string): Answer | null {
    if (data.rateLimitNext !== null) {
      const seconds = data.rateLimitNext;
      data.rateLimitNext = null;
      data.attempts.push({ chatId: channelId, at: Date.now(), outcome: 'rate-limited' });
      return { status: 429, headers: { 'retry-after': String(seconds), 'x-ratelimit-scope': 'user' }, body: { message: 'You are being rate limited.', retry_after: seconds, global: false } };
    }
    if (isDm(channelId) && data.blocked.has(userOfDm(channelId))) {
      data.attempts.push({ chatId: channelId, at: Date.now(), outcome: 'blocked' });
      return error(403, 50007, 'Cannot send messages to this user');
    }
    return null;
  }

  function interactionAnswer(state: InteractionState, body: Record<string, unknown>, visible: boolean): Recorded | null {
    // A button's answer is what the presser is told; a command's is a message in the conversation.
    if (state.kind === 'button') {
      data.pressAnswers.push(String(body.content ?? ''));
      return null;
    }
    return record(state.channelId, body, visible ? {} : { visibleTo: state.userId });
  }

  function guildPayload(guild: FakeGuild): Record<string, unknown> {
    return {
      id: guild.id,
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
        { id: guild.id, name: '@everyone', color: 0, hoist: false, icon: null, unicode_emoji: null, position: 0, permissions: '1024', managed: false, mentionable: false, flags: 0 },
        { id: guild.botRoleId, name: 'roster', color: 0, hoist: false, icon: null, unicode_emoji: null, position: 1, permissions: '274877975552', managed: true, mentionable: false, flags: 0, tags: { bot_id: botUser.id } },
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
      members: [{ ...memberOf(botUser), roles: [guild.botRoleId] }],
      channels: guild.channels.map((_, index) => textChannel(guild, index)),
      threads: [],
      presences: [],
      stage_instances: [],
      guild_scheduled_events: [],
      stickers: [],
      soundboard_sounds: [],
    };
  }

  return Object.assign(data, { userOf, dmOf, userOfDm, guildOf, isDm, memberOf, dmChannel, textChannel, messagePayload, buttonsOf, record, error, tooLong, refusal, interactionAnswer, guildPayload });
}
