import type { Config, Logger } from '@roster/config';
import type { Database } from '@roster/db';

/** The channels Roster can serve, and the variable that enables each. */
export const channels = [
  { channel: 'telegram', enabledBy: 'TELEGRAM_BOT_TOKEN' },
  { channel: 'discord', enabledBy: 'DISCORD_BOT_TOKEN' },
  { channel: 'slack', enabledBy: 'SLACK_BOT_TOKEN' },
  { channel: 'whatsapp', enabledBy: 'WHATSAPP_ENABLED' },
] as const;

export type ChannelName = (typeof channels)[number]['channel'];

export type ChannelConfig = Pick<Config, 'TELEGRAM_BOT_TOKEN' | 'DISCORD_BOT_TOKEN' | 'SLACK_BOT_TOKEN' | 'SLACK_APP_TOKEN' | 'SLACK_SIGNING_SECRET' | 'WHATSAPP_ENABLED'>;

/** Each channel's state from the configuration: `configured`, `not configured`, or what is missing. */
export function channelStatus(config: ChannelConfig): Array<{ channel: ChannelName; configured: boolean; detail: string }> {
  return channels.map(({ channel, enabledBy }) => {
    const value = config[enabledBy];
    const configured = value !== undefined && value !== false;
    if (channel === 'slack' && configured && config.SLACK_APP_TOKEN === undefined && config.SLACK_SIGNING_SECRET === undefined) {
      return { channel, configured: false, detail: 'SLACK_BOT_TOKEN is set but needs SLACK_APP_TOKEN (socket mode) or SLACK_SIGNING_SECRET (events over HTTP)' };
    }
    return { channel, configured, detail: configured ? 'configured' : `not configured (set ${enabledBy})` };
  });
}

export interface GatewayOptions {
  config: ChannelConfig;
  database: Database;
  logger: Logger;
}

export interface RunningGateway {
  /** The channels this gateway serves. */
  channels: readonly ChannelName[];
  stop(): Promise<void>;
}

/**
 * The channel gateway: one adapter per configured channel, each handing
 * inbound messages to the conversation core. Adapters register here as the
 * channels land; a configured channel without an adapter is reported, not
 * silently dropped.
 */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const log = options.logger.child({ component: 'gateway' });
  const configured = channelStatus(options.config).filter((status) => status.configured);
  for (const status of configured) {
    log.warn({ channel: status.channel }, 'channel is configured but this version of Roster has no adapter for it yet');
  }
  log.info({ channels: [] }, 'gateway ready');
  return {
    channels: [],
    async stop() {
      log.info('gateway stopped');
    },
  };
}
