import type { Config } from '@roster/config';

/** The channels Roster can serve, and the variable that enables each. */
export const channels = [
  { channel: 'telegram', enabledBy: 'TELEGRAM_BOT_TOKEN' },
  { channel: 'discord', enabledBy: 'DISCORD_BOT_TOKEN' },
  { channel: 'slack', enabledBy: 'SLACK_BOT_TOKEN' },
  { channel: 'whatsapp', enabledBy: 'WHATSAPP_ENABLED' },
] as const;

export type ChannelName = (typeof channels)[number]['channel'];

export type ChannelConfig = Pick<
  Config,
  | 'TELEGRAM_BOT_TOKEN'
  | 'TELEGRAM_API_ROOT'
  | 'TELEGRAM_WEBHOOK_URL'
  | 'DISCORD_BOT_TOKEN'
  | 'DISCORD_API_URL'
  | 'DISCORD_CHANNELS'
  | 'SLACK_BOT_TOKEN'
  | 'SLACK_APP_TOKEN'
  | 'SLACK_SIGNING_SECRET'
  | 'SLACK_API_URL'
  | 'GATEWAY_PORT'
  | 'HOST'
  | 'PORT'
  | 'WHATSAPP_ENABLED'
>;

/** The stored credentials as the store opens them: `{ channel: { account: { name: value } } }`. */
export type OpenedCredentials = Record<string, Record<string, Record<string, string>>>;

/** Which variable each stored credential of the default account stands in for. */
const storedAs: Record<string, Record<string, keyof ChannelConfig>> = {
  telegram: { bot_token: 'TELEGRAM_BOT_TOKEN' },
  slack: { bot_token: 'SLACK_BOT_TOKEN', signing_secret: 'SLACK_SIGNING_SECRET', app_token: 'SLACK_APP_TOKEN' },
  discord: { bot_token: 'DISCORD_BOT_TOKEN' },
};

/**
 * The configuration with the stored credentials (entered on the page or with
 * `roster channel add`) filled in where the environment leaves them unset:
 * an environment variable, when set, wins over a stored value. Roster serves
 * one bot per channel, the `default` account's.
 */
export function withStoredCredentials<C extends ChannelConfig>(config: C, stored: OpenedCredentials): C {
  const merged: Record<string, unknown> = { ...config };
  for (const [channel, names] of Object.entries(storedAs)) {
    const values = stored[channel]?.default ?? {};
    for (const [name, variable] of Object.entries(names)) {
      if (merged[variable] === undefined && values[name] !== undefined) merged[variable] = values[name];
    }
  }
  return merged as C;
}

/**
 * The configuration with Discord's bound channels (set with `roster channel
 * add discord --channel`, kept on the default account's binding) filled in
 * when DISCORD_CHANNELS leaves them unset: the variable, when set, wins.
 */
export function withBoundChannels<C extends ChannelConfig>(config: C, bindings: readonly StoredBinding[]): C {
  if (config.DISCORD_CHANNELS !== undefined) return config;
  const stored = storedBoundChannels(bindings);
  return stored.length === 0 ? config : { ...config, DISCORD_CHANNELS: stored };
}

/** A binding as the directory lists it, for what the gateway reads of it. */
export interface StoredBinding {
  channel: string;
  account: string;
  boundChannels: readonly string[];
}

/** Discord's bound channels stored on the default account's binding (the bot Roster serves). */
export function storedBoundChannels(bindings: readonly StoredBinding[]): string[] {
  return [...(bindings.find((binding) => binding.channel === 'discord' && binding.account === 'default')?.boundChannels ?? [])];
}

/** Each channel's state from the configuration: `configured`, `not configured`, or what is missing. */
export function channelStatus(config: ChannelConfig): Array<{ channel: ChannelName; configured: boolean; detail: string }> {
  return channels.map(({ channel, enabledBy }) => {
    const value = config[enabledBy];
    const configured = value !== undefined && value !== false;
    if (channel === 'slack' && configured && config.SLACK_APP_TOKEN === undefined && config.SLACK_SIGNING_SECRET === undefined) {
      return {
        channel,
        configured: false,
        detail: 'has a bot token but needs an app-level token (Socket Mode) or a signing secret (events over HTTP): SLACK_APP_TOKEN or SLACK_SIGNING_SECRET, or roster channel add slack',
      };
    }
    const howTo = channel === 'whatsapp' ? `set ${enabledBy}` : `set ${enabledBy} or run roster channel add ${channel}`;
    return { channel, configured, detail: configured ? 'configured' : `not configured (${howTo})` };
  });
}
