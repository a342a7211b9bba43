import type { ChannelLogger as Logger } from '@roster/contracts';
import { ChannelError, type ChannelAdapter, type ChannelStartOptions, type ChannelTarget, type SentMessage } from '@roster/channels';
import {
  ButtonStyle,
  Client,
  ComponentType,
  Events,
  GatewayIntentBits,
  MessageFlags,
  Options,
  Partials,
  Routes,
  SimpleShardingStrategy,
  type APIMessage,
  type ButtonInteraction,
  type RESTOptions,
} from 'discord.js';
import { commandNames, discordCommands } from './discord-commands.js';
import { closedFor, redact, safeError, toChannelError } from './discord-errors.js';
import { conversationId, guardDispatch, toEvent } from './discord-events.js';
import { createInteractions } from './discord-interactions.js';

export { checkDiscordToken, discordGatewayShards } from './discord-check.js';
export { discordCommands } from './discord-commands.js';
export { toChannelError } from './discord-errors.js';

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
  /**
   * The one gateway shard this adapter receives (Discord's sharding:
   * `shard_id = (guild_id >> 22) % count`; direct messages come to shard 0),
   * with discord.js's own `shards` and `shardCount` options. Absent: one
   * connection for every server (a count of 1).
   */
  shard?: { id: number; count: number };
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

/** How long the gateway may take to make the bot ready (its servers included). */
const readyTimeoutMs = 60_000;

const approvalPattern = /^roster:(approve|reject):([0-9a-f-]{36})$/;

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
  const shard = options.shard ?? { id: 0, count: 1 };
  const interactions = createInteractions(log, deferAfterMs);
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
      const event = bot === null ? null : toEvent(message, { bot, account, boundChannels });
      if (event !== null) void start.onMessage(event);
    });
    discord.on(Events.InteractionCreate, (interaction) => {
      if (interaction.isChatInputCommand()) {
        if (!commandNames.has(interaction.commandName)) return;
        const kind = interaction.guildId === null ? 'dm' : 'group';
        interactions.track(interaction, kind === 'group');
        const words = interaction.options.data.map((option) => String(option.value ?? '').trim()).filter((word) => word !== '');
        const user = interaction.user;
        const displayName = user.globalName ?? user.username;
        const target: ChannelTarget = { chatId: interaction.channelId, replyTo: `interaction:${interaction.id}` };
        if (kind === 'dm') target.recipient = user.id;
        else target.visibleTo = user.id;
        void start.onMessage({
          inbound: {
            channel: 'discord',
            account,
            conversation: { externalId: conversationId(account, interaction.channelId), kind },
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
    const entry = interactions.track(interaction, true);
    const user = interaction.user;
    const displayName = user.globalName ?? user.username;
    const result = await start.onApprovalPress({
      approvalId,
      decision,
      sender: { externalId: user.id, ...(displayName === '' ? {} : { displayName }) },
      target: { chatId: interaction.channelId },
    });
    await interactions.answer(entry, result.text.slice(0, discordTextLimit));
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
        shards: [shard.id],
        shardCount: shard.count,
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
      // Closed for good once receiving (another session took this shard, the token was revoked): the host is told, and lets go of it.
      discord.on(Events.ShardDisconnect, (event) => {
        if (client === discord) start.onStopped?.(closedFor(event.code).message);
      });
      // Slash commands belong to the application: registered (replaced) at every start, so they match this version; by shard 0 alone.
      if (shard.id === 0) await call('registering slash commands', () => discord.application!.commands.set(discordCommands));
      log?.info({ bot: bot.username, guilds: discord.guilds.cache.size, shard: `${shard.id}/${shard.count}` }, 'Discord bot receiving');
    },

    async stop() {
      interactions.clear();
      const discord = client;
      client = null;
      if (discord !== null) await discord.destroy();
    },

    async sendText(target, text) {
      const interaction = interactions.of(target);
      if (interaction !== null) return interactions.answer(interaction, text);
      if (target.visibleTo !== undefined) {
        throw new ChannelError('failed', 'An answer for one person’s eyes goes with their slash command, and its 15 minutes are over; ask again.', { retryable: false });
      }
      return post(target, { content: text, flags: MessageFlags.SuppressEmbeds });
    },

    async editText(target, messageId, text) {
      const interaction = interactions.of(target);
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
      if (interactions.of(target) !== null) return;
      const channelId = await channelOf(target);
      await call('showing typing', () => live().rest.post(Routes.channelTyping(channelId)));
    },
  };
}


