import { defineChannelPlugin, optionalSecret, optionalUrl } from '@roster/contracts';
import { z } from 'zod';

/**
 * A Discord channel's id: a snowflake, 17 to 20 digits (Developer Mode, then
 * Copy Channel ID on the channel). A bound channel is one of these.
 */
export const discordChannelIdPattern = /^[0-9]{17,20}$/;

/** The most bound channels one Discord bot has. */
export const maxDiscordBoundChannels = 100;

/** The most gateway shards DISCORD_SHARDS may ask for. */
export const maxDiscordShards = 1024;

interface DiscordSettings {
  token: string;
  apiUrl?: string;
  boundChannels: readonly string[];
  /** DISCORD_SHARDS: the shard count, instead of Discord's recommendation. */
  shards?: number;
}

/**
 * Discord: a bot token (with the Message Content intent on), one gateway
 * session per shard. The shard count is Discord's recommendation (`GET
 * /gateway/bot`) or DISCORD_SHARDS; each shard is leased on its own, so
 * gateways split them.
 */
export const channelPlugin = defineChannelPlugin<DiscordSettings>({
  name: 'discord',
  label: 'Discord',
  summary: 'a bot token, with the Message Content intent on',
  environment: {
    DISCORD_BOT_TOKEN: {
      schema: optionalSecret(),
      example: 'MTA…',
      description: 'A Discord bot token; the gateway serves Discord when set.',
      secret: true,
    },
    DISCORD_API_URL: {
      schema: optionalUrl(['http:', 'https:']),
      example: 'https://discord.com/api',
      description: 'Another Discord REST API base, without the version (a proxy); the gateway address is asked of it. Unset: Discord’s own.',
    },
    DISCORD_SHARDS: {
      schema: z
        .string()
        .trim()
        .transform((value) => (value === '' ? undefined : Number(value)))
        .refine((count) => count === undefined || (Number.isInteger(count) && count >= 1 && count <= maxDiscordShards), { message: `a whole number from 1 to ${maxDiscordShards}` })
        .optional(),
      example: '2',
      description:
        'How many gateway shards the bot connects with, instead of the count Discord recommends (GET /gateway/bot). Each shard is held by one gateway; several gateways split them.',
    },
    DISCORD_CHANNELS: {
      schema: z
        .string()
        .trim()
        .transform((value) => (value === '' ? undefined : [...new Set(value.split(',').map((id) => id.trim()).filter((id) => id !== ''))]))
        .refine((ids) => ids === undefined || (ids.length >= 1 && ids.length <= maxDiscordBoundChannels && ids.every((id) => discordChannelIdPattern.test(id))))
        .optional(),
      example: '1234567890123456789,2345678901234567890',
      description:
        'Discord server channels, by id (comma-separated), where every message is for the bot, without a mention; set, it wins over the ones stored with roster channel add discord --channel.',
    },
  },
  credentials: {
    bot_token: { label: 'the bot token', variable: 'DISCORD_BOT_TOKEN', option: 'token' },
  },
  boundRooms: {
    label: 'Discord server channels',
    option: 'channel',
    variable: 'DISCORD_CHANNELS',
    max: maxDiscordBoundChannels,
    check: (id) =>
      discordChannelIdPattern.test(id) ? null : `A Discord channel id is 17 to 20 digits (Developer Mode on, then right-click the channel → Copy Channel ID), got ${JSON.stringify(id)}.`,
  },
  setup({ environment, stored, boundRooms }) {
    const token = (environment.DISCORD_BOT_TOKEN as string | undefined) ?? stored.bot_token;
    if (token === undefined) return { state: 'off', detail: 'not configured (set DISCORD_BOT_TOKEN or run roster channel add discord)' };
    const apiUrl = environment.DISCORD_API_URL as string | undefined;
    const boundChannels = (environment.DISCORD_CHANNELS as string[] | undefined) ?? boundRooms;
    const shards = environment.DISCORD_SHARDS as number | undefined;
    return {
      state: 'configured',
      settings: { token, ...(apiUrl === undefined ? {} : { apiUrl }), boundChannels, ...(shards === undefined ? {} : { shards }) },
      mode: shards === undefined ? 'gateway' : `gateway, ${shards} shard${shards === 1 ? '' : 's'}`,
    };
  },
  async create(settings, host, shard) {
    const { createDiscordAdapter } = await import('./discord-adapter.js');
    return createDiscordAdapter({
      token: settings.token,
      ...(settings.apiUrl === undefined ? {} : { apiUrl: settings.apiUrl }),
      ...(settings.boundChannels.length === 0 ? {} : { boundChannels: settings.boundChannels }),
      ...(shard === undefined ? {} : { shard }),
      logger: host.logger,
    });
  },
  async shards(settings) {
    if (settings.shards !== undefined) return settings.shards;
    const { discordGatewayShards } = await import('./discord-check.js');
    return discordGatewayShards({ token: settings.token, ...(settings.apiUrl === undefined ? {} : { apiUrl: settings.apiUrl }) });
  },
  async check(settings, _host, { timeoutMs }) {
    const { checkDiscordToken } = await import('./discord-check.js');
    const check = await checkDiscordToken({ token: settings.token, ...(settings.apiUrl === undefined ? {} : { apiUrl: settings.apiUrl }), ...(timeoutMs === undefined ? {} : { timeoutMs }) });
    return { status: check.ok ? 'ok' : 'fail', detail: check.detail };
  },
});
