import { defineChannelPlugin, optionalSecret, optionalUrl } from '@roster/contracts';
import { z } from 'zod';

/**
 * A Discord channel's id: a snowflake, 17 to 20 digits (Developer Mode, then
 * Copy Channel ID on the channel). A bound channel is one of these.
 */
export const discordChannelIdPattern = /^[0-9]{17,20}$/;

/** The most bound channels one Discord bot has. */
export const maxDiscordBoundChannels = 100;

interface DiscordSettings {
  token: string;
  apiUrl?: string;
  boundChannels: readonly string[];
}

/** Discord: a bot token (with the Message Content intent on), one gateway session. */
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
    return { state: 'configured', settings: { token, ...(apiUrl === undefined ? {} : { apiUrl }), boundChannels }, mode: 'gateway' };
  },
  async create(settings, host) {
    const { createDiscordAdapter } = await import('./discord-adapter.js');
    return createDiscordAdapter({
      token: settings.token,
      ...(settings.apiUrl === undefined ? {} : { apiUrl: settings.apiUrl }),
      ...(settings.boundChannels.length === 0 ? {} : { boundChannels: settings.boundChannels }),
      logger: host.logger,
    });
  },
  async check(settings, _host, { timeoutMs }) {
    const { checkDiscordToken } = await import('./discord-adapter.js');
    const check = await checkDiscordToken({ token: settings.token, ...(settings.apiUrl === undefined ? {} : { apiUrl: settings.apiUrl }), ...(timeoutMs === undefined ? {} : { timeoutMs }) });
    return { status: check.ok ? 'ok' : 'fail', detail: check.detail };
  },
});
