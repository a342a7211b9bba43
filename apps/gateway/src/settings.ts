import { channelPlugins } from '@roster/channel-registry';
import type { Config } from '@roster/config';
import type { AnyChannelPlugin, ChannelSetup } from '@roster/contracts';

/** The bot account Roster serves on each channel. */
export const defaultAccount = 'default';

export type ChannelConfig = Pick<Config, 'channels' | 'GATEWAY_PORT' | 'HOST' | 'PORT'>;

/** The stored credentials as the store opens them: `{ channel: { account: { name: value } } }`. */
export type OpenedCredentials = Record<string, Record<string, Record<string, string>>>;

/** A binding as the directory lists it, for what the gateway reads of it. */
export interface StoredBinding {
  channel: string;
  account: string;
  boundChannels: readonly string[];
}

/** What the gateway knows besides the environment: stored credentials and the bindings' bound rooms. */
export interface StoredSettings {
  credentials: OpenedCredentials;
  bindings: readonly StoredBinding[];
}

/** A channel's state: whether it is served, and with what. */
export interface ChannelState {
  plugin: AnyChannelPlugin;
  channel: string;
  setup: ChannelSetup<unknown>;
  /** `configured`, `not configured (…)`, or what is missing. */
  detail: string;
  configured: boolean;
}

/** How the server's address is written in a URL. */
export function serverAddress(config: Pick<Config, 'HOST' | 'PORT'>): string {
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  return `http://${host}:${config.PORT}`;
}

/**
 * Each registered channel's state, from the environment (which wins), the
 * stored credentials of the bot Roster serves (the `default` account) and
 * the bound rooms stored on its binding.
 */
export function channelStates(config: ChannelConfig, stored: StoredSettings = { credentials: {}, bindings: [] }): ChannelState[] {
  return channelPlugins.map((plugin) => {
    const environment = Object.fromEntries(Object.keys(plugin.environment).map((variable) => [variable, config.channels[variable]]));
    const binding = stored.bindings.find((entry) => entry.channel === plugin.name && entry.account === defaultAccount);
    const setup = plugin.setup({
      environment,
      stored: stored.credentials[plugin.name]?.default ?? {},
      boundRooms: binding?.boundChannels ?? [],
      serverAddress: serverAddress(config),
    }) as ChannelSetup<unknown>;
    const detail = setup.state === 'configured' ? 'configured' : setup.detail;
    return { plugin, channel: plugin.name, setup, detail, configured: setup.state === 'configured' };
  });
}
