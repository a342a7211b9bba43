import type { ChannelLogger as Logger } from '@roster/contracts';
import { ChannelError, downloadFile, tooLargeText, type ChannelAdapter, type ChannelEvent, type ChannelStartOptions, type ChannelTarget, type SentMessage } from '@roster/channels';
import { maxFileBytes, type FileKind, type InboundFile } from '@roster/contracts';
import {
  ApplicationCommandOptionType,
  ApplicationFlags,
  ApplicationIntegrationType,
  ButtonStyle,
  Client,
  ComponentType,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  HTTPError,
  InteractionContextType,
  MessageFlags,
  Options,
  Partials,
  RateLimitError,
  REST,
  Routes,
  SimpleShardingStrategy,
  type APIMessage,
  type APIUser,
  type ApplicationCommandDataResolvable,
  type Attachment,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type Message,
  type ClientOptions,
  type RESTOptions,
} from 'discord.js';

/** @discordjs/ws's manager of the gateway shards, as a sharding strategy receives it. */
type GatewayManager = Parameters<NonNullable<NonNullable<ClientOptions['ws']>['buildStrategy']>>[0];

export interface DiscordAdapterOptions {
  /** The bot token (Developer Portal → the application → Bot). Never logged. */
  token: string;
  /** The bot account's name in Roster's bindings (default `default`). */
  account?: string;
  /** Another REST API base (DISCORD_API_URL), without the version: `https://discord.com/api` by default. The gateway's address comes from it (`GET /gateway/bot`). */
  apiUrl?: string;
  logger?: Logger;
  /**
   * How long a slash command's or a button's answer may take before the
   * adapter defers it (Discord shows "thinking…" and waits up to 15 minutes);
   * Discord drops an interaction not answered within 3 seconds. Default 2.5 s.
   */
  deferAfterMs?: number;
  /**
   * Server text channels, by id (DISCORD_CHANNELS, or `roster channel add
   * discord --channel`), in which every message from a person is for the bot,
   * without a mention. Elsewhere in a server, only a mention or a reply to
   * the bot is. Threads under a bound channel are not bound.
   */
  boundChannels?: readonly string[];
}

/** The Discord adapter: the contract, plus the bot's identity once started. */
export interface DiscordAdapter extends ChannelAdapter {
  /** The bot's user id, once started (null before). */
  readonly botId: string | null;
}

/** Discord's longest message content, in characters. */
export const discordTextLimit = 2000;

/** Discord's own REST API base. */
export const discordApiUrl = 'https://discord.com/api';

/** What the bot asks the gateway for: server messages and their words (a privileged intent, switched on in the Developer Portal), and direct messages. */
export const discordIntents = [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent, GatewayIntentBits.DirectMessages];

/** An interaction's token lasts 15 minutes; after that, answers go as plain messages (or not at all, for one person's eyes only). */
const interactionLifetimeMs = 15 * 60 * 1000;

/** Discord's error codes that mean the person (or the conversation) cannot be reached. */
const unreachableCodes = new Set([
  50007, // Cannot send messages to this user (blocked the bot, closed DMs, left every shared server)
  10003, // Unknown Channel
  10013, // Unknown User
  50278, // Cannot send messages to this user (no longer shares a server)
]);

/** How long the gateway may take to make the bot ready (its servers included). */
const readyTimeoutMs = 60_000;

const approvalPattern = /^roster:(approve|reject):([0-9a-f-]{36})$/;

/**
 * Roster's commands as Discord slash commands, registered for the whole
 * application (servers and the bot's direct messages). Each option is a
 * string; the adapter joins them back into the core's form (`/agent Scout`).
 */
export const discordCommands: ApplicationCommandDataResolvable[] = [
  { name: 'agents', description: 'The agents you can talk to' },
  {
    name: 'agent',
    description: 'Talk to one agent from now on',
    options: [
      { type: ApplicationCommandOptionType.String, name: 'name', description: 'The agent’s name', required: true, max_length: 100 },
      { type: ApplicationCommandOptionType.String, name: 'message', description: 'Something to say to it at once', required: false, max_length: 4000 },
    ],
  },
  { name: 'team', description: 'Talk to every agent at once' },
  { name: 'memory', description: 'What this agent knows about you' },
  {
    name: 'forget',
    description: 'Make this agent forget what matches your words',
    options: [{ type: ApplicationCommandOptionType.String, name: 'words', description: 'What to forget', required: true, max_length: 1000 }],
  },
  {
    name: 'link',
    description: 'Tie this Discord account to you, with a code from the owner',
    options: [{ type: ApplicationCommandOptionType.String, name: 'code', description: 'The link code', required: true, max_length: 64 }],
  },
  { name: 'help', description: 'What Roster understands here' },
].map((command) => ({
  ...command,
  contexts: [InteractionContextType.Guild, InteractionContextType.BotDM],
  integrationTypes: [ApplicationIntegrationType.GuildInstall],
})) as ApplicationCommandDataResolvable[];

const commandNames = new Set(['agents', 'agent', 'team', 'memory', 'forget', 'link', 'help']);

/** A slash command or a button press being answered: the first answer replies to it (or fills the deferred reply), later ones follow up. */
interface PendingInteraction {
  interaction: ChatInputCommandInteraction | ButtonInteraction;
  /** Shown to the person alone. */
  ephemeral: boolean;
  state: 'open' | 'deferring' | 'deferred' | 'answered';
  /** Calls on this interaction, one at a time. */
  queue: Promise<unknown>;
  deferTimer: NodeJS.Timeout;
  expiresAt: number;
  /** The ids of the messages sent through it (to edit them through the interaction's webhook). */
  messages: Set<string>;
}

/**
 * The Discord adapter, on discord.js: the gateway (server messages with
 * their content, direct messages), Roster's commands as slash commands
 * answered within Discord's three seconds (deferred, then filled in, when an
 * answer takes longer), approvals with buttons, typing. One-to-one messages
 * are always for the bot; in a server, only a message that mentions it or
 * replies to it, every message in a bound channel, and slash commands (their
 * answers there are shown to the person alone). Answers never ping anyone
 * but the person answered.
 */
export function createDiscordAdapter(options: DiscordAdapterOptions): DiscordAdapter {
  const account = options.account ?? 'default';
  const log = options.logger?.child({ component: 'gateway/discord', account });
  const deferAfterMs = options.deferAfterMs ?? 2500;
  const boundChannels: ReadonlySet<string> = new Set(options.boundChannels ?? []);
  const rest: Partial<RESTOptions> = {
    ...(options.apiUrl === undefined ? {} : { api: options.apiUrl.replace(/\/+$/, '') }),
    // A 429 on a send comes back to the shared code, which waits as asked (and gives up when Roster stops).
    rejectOnRateLimit: (limit) => /^\/(channels|webhooks|interactions|users\/@me\/channels)/.test(limit.route),
  };
  let client: Client | null = null;
  let bot: { id: string; username: string } | null = null;
  const pending = new Map<string, PendingInteraction>();
  /** A person's direct-message channel, by their user id (approvals are pushed to a handle, not a channel). */
  const dmChannels = new Map<string, string>();

  async function call<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw toChannelError(what, error);
    }
  }

  function live(): Client {
    if (client === null) throw new ChannelError('failed', 'The Discord adapter is not started.');
    return client;
  }

  function conversationId(channelId: string): string {
    return account === 'default' ? channelId : `${account}:${channelId}`;
  }

  /** A gateway message as Roster's event; null when it is not for the bot (its own, another bot's, server chatter). */
  function toEvent(message: Message): ChannelEvent | null {
    if (bot === null || message.author.bot || message.system || message.webhookId !== null) return null;
    const kind = message.guildId === null ? 'dm' : 'group';
    const mention = new RegExp(`<@!?${bot.id}>`, 'g');
    const botRole = message.guild?.roles.botRoleFor(bot.id)?.id;
    const mentionsBot = mention.test(message.content) || (botRole !== undefined && message.content.includes(`<@&${botRole}>`));
    const replyTo = message.reference?.messageId ?? null;
    const replyToBot = replyTo !== null && message.mentions.repliedUser?.id === bot.id;
    // In a bound channel every message is for the bot, as if it were mentioned.
    const bound = kind === 'group' && boundChannels.has(message.channelId);
    if (kind === 'group' && !mentionsBot && !replyToBot && !bound) return null;
    let text = message.content.replace(mention, ' ');
    if (botRole !== undefined) text = text.split(`<@&${botRole}>`).join(' ');
    text = text.replace(/[ \t]{2,}/g, ' ').trim();
    const attachments = [...message.attachments.values()];
    const media = attachments.map(mediaOf);
    const target: ChannelTarget = { chatId: message.channelId };
    if (kind === 'group') target.replyTo = message.id;
    else target.recipient = message.author.id;
    const displayName = message.author.globalName ?? message.author.username;
    return {
      inbound: {
        channel: 'discord',
        account,
        conversation: { externalId: conversationId(message.channelId), kind },
        sender: { externalId: message.author.id, ...(displayName === '' ? {} : { displayName }) },
        externalMessageId: message.id,
        text,
      },
      mentionsBot: mentionsBot || bound,
      replyTo,
      replyToBot,
      media,
      ...(attachments.length === 0 ? {} : { fetchFiles: (signal: AbortSignal) => fetchFiles(attachments, media, signal) }),
      target,
      // A message id is unique on Discord: the same message delivered again (after a resume) is the same delivery.
      deliveryId: `message:${message.id}`,
    };
  }

  /**
   * The attachments of a message, from Discord's CDN (their addresses are
   * signed; no token goes with them), each at most `maxFileBytes`: one
   * Discord announced larger is refused before anything is fetched. Videos
   * are skipped.
   */
  async function fetchFiles(attachments: readonly Attachment[], media: ChannelEvent['media'], signal: AbortSignal) {
    const files: InboundFile[] = [];
    const skipped: ChannelEvent['media'] = [];
    for (const [index, attachment] of attachments.entries()) {
      if (media[index] === 'video') {
        skipped.push('video');
        continue;
      }
      const mediaType = attachment.contentType?.split(';')[0]?.trim() || 'application/octet-stream';
      const kind: FileKind = mediaType.startsWith('image/') ? 'image' : mediaType.startsWith('audio/') ? 'audio' : 'file';
      if (attachment.size > maxFileBytes) throw new ChannelError('failed', tooLargeText(kind));
      const data = await downloadFile(attachment.url, { kind, platform: 'Discord', signal });
      files.push({ kind, mediaType, data, ...(attachment.name === '' ? {} : { name: attachment.name }) });
    }
    return { files, skipped };
  }

  /** Keep an interaction to answer, and defer it when no answer came in time. */
  function track(interaction: ChatInputCommandInteraction | ButtonInteraction, ephemeral: boolean): PendingInteraction {
    // Counted from its creation by Discord's clock, or from its arrival by ours when this machine's clock runs behind.
    const since = Math.min(interaction.createdTimestamp, Date.now());
    const entry: PendingInteraction = {
      interaction,
      ephemeral,
      state: 'open',
      queue: Promise.resolve(),
      expiresAt: since + interactionLifetimeMs,
      messages: new Set(),
      deferTimer: setTimeout(
        () => {
          entry.queue = entry.queue.then(async () => {
            if (entry.state !== 'open') return;
            entry.state = 'deferring';
            try {
              await interaction.deferReply(ephemeral ? { flags: MessageFlags.Ephemeral } : {});
              entry.state = 'deferred';
            } catch (error) {
              entry.state = 'open';
              log?.warn({ err: safeError(error) }, 'a Discord interaction could not be deferred');
            }
          });
        },
        Math.max(0, deferAfterMs - (Date.now() - since)),
      ),
    };
    entry.deferTimer.unref();
    pending.set(interaction.id, entry);
    setTimeout(() => pending.delete(interaction.id), interactionLifetimeMs).unref();
    return entry;
  }

  /** One answer through an interaction: the reply, the deferred reply filled in, or a follow-up. */
  function answerInteraction(entry: PendingInteraction, text: string): Promise<SentMessage> {
    const next = entry.queue.then(async (): Promise<SentMessage> => {
      const flags = entry.ephemeral ? MessageFlags.Ephemeral : undefined;
      const allowedMentions = { parse: [] };
      let id: string;
      if (entry.state === 'open') {
        clearTimeout(entry.deferTimer);
        const response = await call('answering a command', () => entry.interaction.reply({ content: text, allowedMentions, ...(flags === undefined ? {} : { flags }), withResponse: true }));
        id = response.resource?.message?.id ?? `interaction:${entry.interaction.id}`;
      } else if (entry.state === 'deferred') {
        id = (await call('answering a command', () => entry.interaction.editReply({ content: text, allowedMentions }))).id;
      } else {
        id = (await call('following up a command', () => entry.interaction.followUp({ content: text, allowedMentions, ...(flags === undefined ? {} : { flags }) }))).id;
      }
      entry.state = 'answered';
      entry.messages.add(id);
      return { id };
    });
    entry.queue = next.catch(() => undefined);
    return next;
  }

  /** The interaction a target answers, while its token lasts. */
  function interactionOf(target: ChannelTarget): PendingInteraction | null {
    const id = target.replyTo?.startsWith('interaction:') === true ? target.replyTo.slice('interaction:'.length) : null;
    const entry = id === null ? undefined : pending.get(id);
    return entry !== undefined && Date.now() < entry.expiresAt ? entry : null;
  }

  /** The channel to post in: a person's handle (an approval pushed to the owner) opens their direct-message channel. */
  async function channelOf(target: ChannelTarget): Promise<string> {
    if (target.recipient === undefined || target.chatId !== target.recipient) return target.chatId;
    const known = dmChannels.get(target.recipient);
    if (known !== undefined) return known;
    const channel = (await call('opening a direct message', () => live().rest.post(Routes.userChannels(), { body: { recipient_id: target.recipient } }))) as { id: string };
    dmChannels.set(target.recipient, channel.id);
    return channel.id;
  }

  async function post(target: ChannelTarget, body: Record<string, unknown>): Promise<SentMessage> {
    const channelId = await channelOf(target);
    const replyTo = target.replyTo !== undefined && !target.replyTo.startsWith('interaction:') ? target.replyTo : undefined;
    const sent = (await call('sending a message', () =>
      live().rest.post(Routes.channelMessages(channelId), {
        body: {
          ...body,
          // Nobody is pinged by what an agent writes; a reply notifies the person it answers.
          allowed_mentions: { parse: [], replied_user: true },
          ...(replyTo === undefined ? {} : { message_reference: { message_id: replyTo, fail_if_not_exists: false } }),
        },
      }),
    )) as APIMessage;
    return { id: sent.id };
  }

  function listen(start: ChannelStartOptions, discord: Client): void {
    discord.on(Events.MessageCreate, (message) => {
      const event = toEvent(message);
      if (event !== null) start.onMessage(event);
    });
    discord.on(Events.InteractionCreate, (interaction) => {
      if (interaction.isChatInputCommand()) {
        if (!commandNames.has(interaction.commandName)) return;
        const kind = interaction.guildId === null ? 'dm' : 'group';
        track(interaction, kind === 'group');
        const words = interaction.options.data.map((option) => String(option.value ?? '').trim()).filter((word) => word !== '');
        const user = interaction.user;
        const displayName = user.globalName ?? user.username;
        const target: ChannelTarget = { chatId: interaction.channelId, replyTo: `interaction:${interaction.id}` };
        if (kind === 'dm') target.recipient = user.id;
        else target.visibleTo = user.id;
        start.onMessage({
          inbound: {
            channel: 'discord',
            account,
            conversation: { externalId: conversationId(interaction.channelId), kind },
            sender: { externalId: user.id, ...(displayName === '' ? {} : { displayName }) },
            externalMessageId: `command:${interaction.id}`,
            text: [`/${interaction.commandName}`, ...words].join(' '),
          },
          mentionsBot: true,
          replyTo: null,
          replyToBot: false,
          media: [],
          target,
          deliveryId: `interaction:${interaction.id}`,
        });
        return;
      }
      if (interaction.isButton()) {
        const match = approvalPattern.exec(interaction.customId);
        if (match === null) return;
        void onPress(start, interaction, match[1] as 'approve' | 'reject', match[2]!).catch((error: unknown) =>
          log?.error({ err: safeError(error) }, 'an approval button press could not be answered'),
        );
      }
    });
    discord.on(Events.Error, (error) => log?.error({ err: safeError(error) }, 'the Discord client failed'));
    discord.on(Events.Warn, (warning) => log?.warn({ warning: redact(warning) }, 'the Discord client warns'));
  }

  async function onPress(start: ChannelStartOptions, interaction: ButtonInteraction, decision: 'approve' | 'reject', approvalId: string): Promise<void> {
    const entry = track(interaction, true);
    const user = interaction.user;
    const displayName = user.globalName ?? user.username;
    const result = await start.onApprovalPress({
      approvalId,
      decision,
      sender: { externalId: user.id, ...(displayName === '' ? {} : { displayName }) },
      target: { chatId: interaction.channelId },
    });
    await answerInteraction(entry, result.text.slice(0, discordTextLimit));
    if (result.decided) {
      // The decision replaces the buttons; the text the owner read stays above it.
      const shown = interaction.message.content;
      const content = `${shown}\n\n${result.text}`;
      await call('editing a message', () =>
        live().rest.patch(Routes.channelMessage(interaction.channelId, interaction.message.id), {
          body: { content: content.length <= discordTextLimit ? content : result.text.slice(0, discordTextLimit), components: [] },
        }),
      );
    }
  }

  return {
    channel: 'discord',
    account,
    capabilities: { threads: false, buttons: true, media: true, typing: true, textLimit: discordTextLimit, commandPrefix: '/' },
    get botId() {
      return bot?.id ?? null;
    },

    async start(start) {
      const discord = new Client({
        intents: discordIntents,
        // Direct-message channels are not known before their first message: without this, discord.js drops it.
        partials: [Partials.Channel],
        // People's words are not kept in the process's memory: messages are handed on, not cached.
        makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 0 }),
        allowedMentions: { parse: [] },
        rest,
        ws: { buildStrategy: (manager) => new SimpleShardingStrategy(guardDispatch(manager, log)) },
      });
      listen(start, discord);
      let timer: NodeJS.Timeout | undefined;
      const ready = new Promise<void>((resolve, reject) => {
        discord.once(Events.ClientReady, () => resolve());
        // A connection Discord closes for good (a refused token or intents) fails the start at once, with what to do.
        discord.once(Events.ShardDisconnect, (event) => reject(closedFor(event.code)));
        timer = setTimeout(() => reject(new ChannelError('failed', `Discord's gateway did not make the bot ready within ${readyTimeoutMs / 1000} s; check DISCORD_API_URL and the network.`, { retryable: true })), readyTimeoutMs);
      });
      try {
        await Promise.all([discord.login(options.token), ready]);
      } catch (error) {
        await discord.destroy().catch(() => undefined);
        throw toChannelError('connecting to the gateway', error);
      } finally {
        clearTimeout(timer);
      }
      client = discord;
      bot = { id: discord.user!.id, username: discord.user!.username };
      // Slash commands belong to the application: registered (replaced) at every start, so they match this version.
      await call('registering slash commands', () => discord.application!.commands.set(discordCommands));
      log?.info({ bot: bot.username, guilds: discord.guilds.cache.size }, 'Discord bot receiving');
    },

    async stop() {
      for (const entry of pending.values()) clearTimeout(entry.deferTimer);
      pending.clear();
      const discord = client;
      client = null;
      if (discord !== null) await discord.destroy();
    },

    async sendText(target, text) {
      const interaction = interactionOf(target);
      if (interaction !== null) return answerInteraction(interaction, text);
      if (target.visibleTo !== undefined) {
        throw new ChannelError('failed', 'An answer for one person’s eyes goes with their slash command, and its 15 minutes are over; ask again.', { retryable: false });
      }
      return post(target, { content: text, flags: MessageFlags.SuppressEmbeds });
    },

    async editText(target, messageId, text) {
      const interaction = interactionOf(target);
      if (interaction !== null && interaction.messages.has(messageId)) {
        await call('editing a reply', () => interaction.interaction.editReply({ message: messageId, content: text, allowedMentions: { parse: [] } }));
        return;
      }
      const channelId = await channelOf(target);
      await call('editing a message', () => live().rest.patch(Routes.channelMessage(channelId, messageId), { body: { content: text, allowed_mentions: { parse: [] } } }));
    },

    async sendApproval(target, approval) {
      return post(target, {
        content: approval.text,
        components: [
          {
            type: ComponentType.ActionRow,
            components: [
              { type: ComponentType.Button, style: ButtonStyle.Success, label: 'Approve', custom_id: `roster:approve:${approval.id}` },
              { type: ComponentType.Button, style: ButtonStyle.Danger, label: 'Reject', custom_id: `roster:reject:${approval.id}` },
            ],
          },
        ],
      });
    },

    async sendTyping(target) {
      // A command's answer shows "thinking…" instead, once deferred.
      if (interactionOf(target) !== null) return;
      const channelId = await channelOf(target);
      await call('showing typing', () => live().rest.post(Routes.channelTyping(channelId)));
    },
  };
}

function mediaOf(attachment: Attachment): ChannelEvent['media'][number] {
  const type = attachment.contentType ?? '';
  if (type.startsWith('image/')) return 'image';
  // A voice message is an audio attachment flagged as one (with a waveform).
  if (type.startsWith('audio/')) return attachment.waveform !== null || attachment.duration !== null ? 'voice' : 'audio';
  if (type.startsWith('video/')) return 'video';
  return 'file';
}

/**
 * A Discord failure in Roster's terms: a 429 waits as Discord asked; a person
 * who blocked the bot or cannot be sent direct messages (50007), or a channel
 * or user that is gone, cannot be reached; a 5xx or a network failure may be
 * tried again. The message never repeats what was sent.
 */
export function toChannelError(what: string, error: unknown): ChannelError {
  if (ChannelError.isChannelError(error)) return error;
  if (error instanceof RateLimitError) {
    const waitMs = Math.max(0, Math.ceil(error.retryAfter));
    return new ChannelError('rate-limited', `Discord asked to wait ${(waitMs / 1000).toFixed(1)} s before ${what} again.`, { retryAfterMs: waitMs });
  }
  if (error instanceof DiscordAPIError) {
    const code = typeof error.code === 'number' ? error.code : Number(error.code);
    if (unreachableCodes.has(code)) return new ChannelError('unreachable', `Discord cannot deliver to this person or channel (${what}): ${code} ${error.message}.`);
    if (error.status === 401) return new ChannelError('failed', `Discord refused the bot token (${what}): check DISCORD_BOT_TOKEN.`);
    if (code === 50001 || code === 50013) {
      return new ChannelError('failed', `Discord refused ${what}: the bot lacks access or a permission in that channel (${code}); invite it with Send Messages and Read Message History.`);
    }
    if (code === 10062) return new ChannelError('failed', `Discord no longer knows that interaction (${what}): it was not answered within 3 seconds, or its 15 minutes are over.`);
    return new ChannelError('failed', `Discord's ${what} failed: ${error.status} ${code} ${error.message}.`, { retryable: error.status >= 500 });
  }
  if (error instanceof HTTPError) return new ChannelError('failed', `Discord's ${what} failed: ${error.status}.`, { retryable: error.status >= 500 });
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'TokenInvalid') return new ChannelError('failed', `Discord refused the bot token (${what}): check DISCORD_BOT_TOKEN.`);
  const name = error instanceof Error ? error.name : 'Error';
  return new ChannelError('failed', `Discord could not be reached for ${what} (${name}); check DISCORD_API_URL and the network.`, { retryable: true });
}

/**
 * discord.js hands every gateway event to its handlers as it came, without
 * checking its shape: one malformed event (a message without an author, an
 * interaction without data) throws out of them, and an exception thrown
 * there takes the whole process down. The shards' events pass through this
 * before they reach discord.js: an event its handlers cannot read is dropped
 * with a warning (its type and the error's name, never its content), and the
 * connection goes on.
 */
function guardDispatch(manager: GatewayManager, log: Logger | undefined): GatewayManager {
  const emit = (event: string, payload: { data?: { t?: unknown } }): boolean => {
    try {
      return (manager.emit as (name: string, ...args: unknown[]) => boolean).call(manager, event, payload);
    } catch (error) {
      // Only a platform event is dropped; anything else is the library's own and goes on as it was.
      if (event !== 'dispatch') throw error;
      log?.warn({ event: typeof payload.data?.t === 'string' ? payload.data.t.slice(0, 40) : null, err: { name: error instanceof Error ? error.name : 'Error' } }, 'a gateway event Discord sent could not be read and was dropped');
      return false;
    }
  };
  return new Proxy(manager, {
    get(target, property) {
      if (property === 'emit') return emit;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Why Discord closed the gateway for good, in words an operator can act on. */
function closedFor(code: number): ChannelError {
  if (code === 4004) return new ChannelError('failed', 'Discord refused the bot token (the gateway): check DISCORD_BOT_TOKEN.');
  if (code === 4014) {
    return new ChannelError('failed', 'Discord refused the gateway intents: switch on the Message Content intent for the bot in the Developer Portal (Bot → Privileged Gateway Intents).');
  }
  return new ChannelError('failed', `Discord closed the gateway connection for good (${code}).`);
}

/** Interaction and webhook tokens ride in URLs: never logged. */
function redact(text: string): string {
  return text.replace(/(webhooks\/\d+\/|interactions\/\d+\/)[^/\s?]+/g, '$1[redacted]');
}

function safeError(error: unknown): { name: string; message: string } {
  if (ChannelError.isChannelError(error)) return { name: error.name, message: error.message };
  if (error instanceof Error) return { name: error.name, message: redact(error.message) };
  return { name: 'Error', message: redact(String(error)) };
}

/**
 * Whether Discord takes this bot token (`GET /users/@me` against the API
 * base) and the application has the Message Content intent switched on
 * (`GET /applications/@me`), each within `timeoutMs` (default 5 s). Says
 * why not in words an operator can act on.
 */
export async function checkDiscordToken(options: { token: string; apiUrl?: string; timeoutMs?: number }): Promise<{ ok: boolean; detail: string }> {
  const rest = new REST({
    ...(options.apiUrl === undefined ? {} : { api: options.apiUrl.replace(/\/+$/, '') }),
    timeout: options.timeoutMs ?? 5000,
    retries: 0,
    rejectOnRateLimit: () => true,
  }).setToken(options.token);
  let me: APIUser;
  try {
    me = (await rest.get(Routes.user())) as APIUser;
  } catch (error) {
    return { ok: false, detail: toChannelError('users/@me', error).message };
  }
  if (me.bot !== true) return { ok: false, detail: 'the token is not a bot’s: DISCORD_BOT_TOKEN is the token on the Bot page of the application' };
  const accepted = `token accepted: ${me.username}${options.apiUrl === undefined ? '' : ` at ${options.apiUrl}`}`;
  // Without the Message Content intent switched on, Discord refuses the gateway connection Roster asks for.
  let application: { flags?: number };
  try {
    application = (await rest.get(Routes.currentApplication())) as { flags?: number };
  } catch (error) {
    return { ok: false, detail: `${accepted}, but ${toChannelError('applications/@me', error).message}` };
  }
  const messageContent = ApplicationFlags.GatewayMessageContent | ApplicationFlags.GatewayMessageContentLimited;
  if (((application.flags ?? 0) & messageContent) === 0) {
    return { ok: false, detail: `${accepted}, but the Message Content intent is off: switch it on in the Developer Portal (Bot → Privileged Gateway Intents)` };
  }
  return { ok: true, detail: accepted };
}
