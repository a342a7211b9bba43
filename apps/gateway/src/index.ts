import { serveChannel, type ChannelAdapter, type ServedChannel } from '@roster/channels';
import { checkSlackToken, createSlackAdapter } from '@roster/channel-slack';
import { checkTelegramToken, createTelegramAdapter } from '@roster/channel-telegram';
import { createWhatsAppAdapter, readWhatsAppLink, type WhatsAppSocketFactory } from '@roster/channel-whatsapp';
import type { Config, InstallationKey, Logger } from '@roster/config';
import type { Core } from '@roster/core';
import type { Database } from '@roster/db';
import type { AuditLog } from '@roster/memory';
import { createApprovalDesk } from '@roster/jobs';

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
  | 'DISCORD_BOT_TOKEN'
  | 'SLACK_BOT_TOKEN'
  | 'SLACK_APP_TOKEN'
  | 'SLACK_SIGNING_SECRET'
  | 'SLACK_API_URL'
  | 'SLACK_EVENTS_PORT'
  | 'HOST'
  | 'WHATSAPP_ENABLED'
>;

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

/** A channel as `roster doctor` reports it. */
export interface ChannelCheck {
  channel: ChannelName;
  status: 'ok' | 'fail' | 'off';
  detail: string;
}

/**
 * Each channel checked against its platform: a configured token is tried
 * (Telegram's getMe, Slack's auth.test) and called ok only when the platform
 * takes it; WhatsApp's link is read from the database (linked as +number, or
 * waiting for a scan, or logged out); a channel this version cannot serve
 * says so.
 */
export async function checkChannels(config: ChannelConfig, options: { timeoutMs?: number; database?: Database } = {}): Promise<ChannelCheck[]> {
  return Promise.all(
    channelStatus(config).map(async ({ channel, configured, detail }): Promise<ChannelCheck> => {
      if (!configured) return { channel, status: detail.startsWith('not configured') ? 'off' : 'fail', detail };
      const timeout = options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs };
      switch (channel) {
        case 'telegram': {
          const check = await checkTelegramToken({ token: config.TELEGRAM_BOT_TOKEN!, ...(config.TELEGRAM_API_ROOT === undefined ? {} : { apiRoot: config.TELEGRAM_API_ROOT }), ...timeout });
          return { channel, status: check.ok ? 'ok' : 'fail', detail: check.ok ? `${check.detail}; long polling` : check.detail };
        }
        case 'slack': {
          const check = await checkSlackToken({ botToken: config.SLACK_BOT_TOKEN!, ...(config.SLACK_API_URL === undefined ? {} : { apiUrl: config.SLACK_API_URL }), ...timeout });
          const mode = config.SLACK_APP_TOKEN !== undefined ? 'Socket Mode' : `events over HTTP at http://${config.HOST}:${config.SLACK_EVENTS_PORT}/slack/events`;
          return { channel, status: check.ok ? 'ok' : 'fail', detail: check.ok ? `${check.detail}; ${mode}` : check.detail };
        }
        case 'whatsapp':
          return { channel, ...(await checkWhatsApp(options.database)) };
        default:
          return { channel, status: 'fail', detail: `configured, but this version of Roster has no ${channel} adapter, so nothing serves it` };
      }
    }),
  );
}

const relink = 'roster channel add whatsapp';

/** WhatsApp's link as the gateway last recorded it. */
async function checkWhatsApp(database: Database | undefined): Promise<Pick<ChannelCheck, 'status' | 'detail'>> {
  if (database === undefined) return { status: 'fail', detail: 'its link is kept in the database, which could not be opened' };
  let link: Awaited<ReturnType<typeof readWhatsAppLink>>;
  try {
    link = await readWhatsAppLink(database);
  } catch (error) {
    return { status: 'fail', detail: `its link could not be read: ${(error as Error).message}` };
  }
  if (link === null) return { status: 'fail', detail: `not linked yet: run ${relink} and scan the QR code with the phone (WhatsApp → Linked devices)` };
  switch (link.status) {
    case 'linked':
      return { status: 'ok', detail: `linked as ${link.phone ?? 'an unknown number'}` };
    case 'reconnecting':
      return { status: 'ok', detail: `linked as ${link.phone ?? 'an unknown number'}; the connection dropped and is being tried again (since ${link.updatedAt.toISOString()})` };
    case 'waiting_for_scan':
      return {
        status: 'fail',
        detail: link.waitingQr
          ? `waiting for a scan: scan the QR code on the Channels page, or run ${relink}`
          : `not linked: no phone scanned the QR code in time; run ${relink}`,
      };
    case 'logged_out':
      return { status: 'fail', detail: `logged out${link.phone === null ? '' : ` (was ${link.phone})`}: the phone removed this device; re-link with ${relink}` };
  }
}

export interface GatewayOptions {
  config: ChannelConfig;
  database: Database;
  /** The installation key: WhatsApp's session is sealed with it. */
  key: InstallationKey;
  /** Makes WhatsApp's socket (baileys' makeWASocket unless given: a test gives one whose far side is a fake). */
  whatsappSocketFactory?: WhatsAppSocketFactory;
  /** The conversation core every channel hands its messages to. */
  core: Core;
  /** Memory's audit log: an approval decided on a channel is audited like one decided anywhere else. */
  audit: AuditLog;
  logger: Logger;
  /** How often the owner's pending approvals are looked for (default a minute). */
  approvalPollMs?: number;
}

export interface RunningGateway {
  /** The channels this gateway serves. */
  channels: readonly ChannelName[];
  stop(): Promise<void>;
}

/** The adapter for a configured channel, or null when this version has none for it. */
function adapterFor(channel: ChannelName, options: GatewayOptions): ChannelAdapter | null {
  const { config, logger } = options;
  switch (channel) {
    case 'telegram':
      return createTelegramAdapter({
        token: config.TELEGRAM_BOT_TOKEN!,
        ...(config.TELEGRAM_API_ROOT === undefined ? {} : { apiRoot: config.TELEGRAM_API_ROOT }),
        logger,
      });
    case 'slack':
      return createSlackAdapter({
        botToken: config.SLACK_BOT_TOKEN!,
        ...(config.SLACK_APP_TOKEN === undefined ? {} : { appToken: config.SLACK_APP_TOKEN }),
        ...(config.SLACK_SIGNING_SECRET === undefined ? {} : { signingSecret: config.SLACK_SIGNING_SECRET }),
        ...(config.SLACK_API_URL === undefined ? {} : { apiUrl: config.SLACK_API_URL }),
        http: { port: config.SLACK_EVENTS_PORT, host: config.HOST },
        logger,
      });
    case 'whatsapp':
      return createWhatsAppAdapter({
        database: options.database,
        key: options.key,
        logger,
        ...(options.whatsappSocketFactory === undefined ? {} : { socketFactory: options.whatsappSocketFactory }),
      });
    default:
      return null;
  }
}

/**
 * The channel gateway: one adapter per configured channel, each served
 * through the conversation core (`serveChannel`), with the owner's pending
 * approvals pushed to the owner's handles. A configured channel without an
 * adapter is reported, not silently dropped; one that fails to start stops
 * the gateway with its reason, after stopping the others.
 */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const log = options.logger.child({ component: 'gateway' });
  const configured = channelStatus(options.config).filter((status) => status.configured);
  const approvals = createApprovalDesk(options.database, options.audit, options.core.directory);
  const served: Array<{ channel: ChannelName; served: ServedChannel }> = [];
  try {
    for (const status of configured) {
      const adapter = adapterFor(status.channel, options);
      if (adapter === null) {
        log.warn({ channel: status.channel }, 'channel is configured but this version of Roster has no adapter for it yet');
        continue;
      }
      served.push({
        channel: status.channel,
        served: await serveChannel({
          adapter,
          core: options.core,
          logger: options.logger,
          approvals,
          ...(options.approvalPollMs === undefined ? {} : { approvalPollMs: options.approvalPollMs }),
        }),
      });
    }
  } catch (error) {
    await Promise.allSettled(served.map((entry) => entry.served.stop()));
    throw error;
  }
  const names = served.map((entry) => entry.channel);
  log.info({ channels: names }, 'gateway ready');
  return {
    channels: names,
    async stop() {
      await Promise.allSettled(served.map((entry) => entry.served.stop()));
      log.info('gateway stopped');
    },
  };
}
