import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveChannel, type ChannelAdapter, type ChannelCredentialStore, type ServedChannel } from '@roster/channels';
import { checkDiscordToken, createDiscordAdapter } from '@roster/channel-discord';
import { checkSlackToken, createSlackAdapter, slackEventsPath, type SlackAdapter } from '@roster/channel-slack';
import { checkTelegramToken, createTelegramAdapter, telegramWebhookPath, type TelegramAdapter } from '@roster/channel-telegram';
import { createWhatsAppAdapter, readWhatsAppLink, type WhatsAppSocketFactory } from '@roster/channel-whatsapp';
import type { Config, InstallationKey, Logger } from '@roster/config';
import type { Core } from '@roster/core';
import type { Database } from '@roster/db';
import type { AuditLog } from '@roster/memory';
import { createApprovalDesk } from '@roster/jobs';
import { channelStatus, channels, storedBoundChannels, withBoundChannels, withStoredCredentials, type ChannelConfig, type ChannelName, type OpenedCredentials } from './settings.js';

export {
  channelStatus,
  channels,
  storedBoundChannels,
  withBoundChannels,
  withStoredCredentials,
  type ChannelConfig,
  type ChannelName,
  type OpenedCredentials,
  type StoredBinding,
} from './settings.js';

/** A channel as `roster doctor` reports it. */
export interface ChannelCheck {
  channel: ChannelName;
  status: 'ok' | 'fail' | 'off';
  detail: string;
}

/** How the server's address is written in a URL. */
function serverAddress(config: Pick<ChannelConfig, 'HOST' | 'PORT'>): string {
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  return `http://${host}:${config.PORT}`;
}

/**
 * Each channel checked against its platform: a configured token is tried
 * (Telegram's getMe, Slack's auth.test, Discord's GET /users/@me) and called
 * ok only when the platform takes it; WhatsApp's link is read from the database.
 */
export async function checkChannels(config: ChannelConfig, options: { timeoutMs?: number; database?: Database } = {}): Promise<ChannelCheck[]> {
  return Promise.all(
    channelStatus(config).map(async ({ channel, configured, detail }): Promise<ChannelCheck> => {
      if (!configured) return { channel, status: detail.startsWith('not configured') ? 'off' : 'fail', detail };
      const timeout = options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs };
      switch (channel) {
        case 'telegram': {
          const check = await checkTelegramToken({ token: config.TELEGRAM_BOT_TOKEN!, ...(config.TELEGRAM_API_ROOT === undefined ? {} : { apiRoot: config.TELEGRAM_API_ROOT }), ...timeout });
          const mode = config.TELEGRAM_WEBHOOK_URL === undefined ? 'long polling' : `webhook at ${config.TELEGRAM_WEBHOOK_URL}`;
          return { channel, status: check.ok ? 'ok' : 'fail', detail: check.ok ? `${check.detail}; ${mode}` : check.detail };
        }
        case 'slack': {
          const check = await checkSlackToken({ botToken: config.SLACK_BOT_TOKEN!, ...(config.SLACK_API_URL === undefined ? {} : { apiUrl: config.SLACK_API_URL }), ...timeout });
          const mode = config.SLACK_APP_TOKEN !== undefined ? 'Socket Mode' : `events over HTTP at ${serverAddress(config)}${slackEventsPath}`;
          return { channel, status: check.ok ? 'ok' : 'fail', detail: check.ok ? `${check.detail}; ${mode}` : check.detail };
        }
        case 'discord': {
          const check = await checkDiscordToken({ token: config.DISCORD_BOT_TOKEN!, ...(config.DISCORD_API_URL === undefined ? {} : { apiUrl: config.DISCORD_API_URL }), ...timeout });
          return { channel, status: check.ok ? 'ok' : 'fail', detail: check.ok ? `${check.detail}; gateway` : check.detail };
        }
        case 'whatsapp':
          return { channel, ...(await checkWhatsApp(options.database)) };
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

/** The platforms' webhooks (Slack's events, Telegram's updates) a gateway answers, for the server that receives them. */
export interface ChannelWebhooks {
  /** The paths a platform posts to. */
  readonly paths: readonly string[];
  /**
   * Answer one request to one of `paths`: the channel's own checks decide
   * (Slack's signature, Telegram's secret header); 404 when that channel is
   * not served in webhook mode by this gateway.
   */
  handle(request: IncomingMessage, response: ServerResponse): void;
}

export interface GatewayOptions {
  config: ChannelConfig;
  database: Database;
  /** The conversation core every channel hands its messages to. */
  core: Core;
  /** Memory's audit log: an approval decided on a channel is audited like one decided anywhere else. */
  audit: AuditLog;
  logger: Logger;
  /** The installation key: Telegram's webhook secret is derived from it, and WhatsApp's session is sealed with it. */
  key: InstallationKey;
  /** Makes WhatsApp's socket (baileys' makeWASocket unless given: a test gives one whose far side is a fake). */
  whatsappSocketFactory?: WhatsAppSocketFactory;
  /** Stored channel credentials: served where the environment sets none, and picked up when they change. */
  credentials?: ChannelCredentialStore;
  /** How often stored credentials are looked at for a change (default 5 s). */
  reloadMs?: number;
  /**
   * Where platform webhooks arrive: `server` when the HTTP server of this
   * process mounts `webhooks` (roster start); `own-port` to listen on
   * GATEWAY_PORT (a gateway running alone). Default `own-port`.
   */
  webhooksOn?: 'server' | 'own-port';
  /** How often the owner's pending approvals are looked for (default a minute). */
  approvalPollMs?: number;
}

export interface RunningGateway {
  /** The channels this gateway serves now. */
  readonly channels: readonly ChannelName[];
  /** The webhook entry for the server of this process. */
  readonly webhooks: ChannelWebhooks;
  /** Where the gateway listens itself for webhooks (own-port), or null. */
  readonly webhookUrl: string | null;
  /** Look at stored credentials (and Discord's stored bound channels) now and restart the channels whose settings changed. */
  reload(): Promise<void>;
  stop(): Promise<void>;
}

/** The secret Telegram sends with each webhook request: derived from the installation key, so it needs no storing. */
export function telegramWebhookSecret(key: InstallationKey, account = 'default'): string {
  return key.derive(`roster/telegram-webhook/${account}`).toString('base64url');
}

/** The settings a channel's adapter is made from: a change restarts it. */
function settingsOf(channel: ChannelName, config: ChannelConfig): string {
  switch (channel) {
    case 'telegram':
      return JSON.stringify([config.TELEGRAM_BOT_TOKEN, config.TELEGRAM_API_ROOT, config.TELEGRAM_WEBHOOK_URL]);
    case 'slack':
      return JSON.stringify([config.SLACK_BOT_TOKEN, config.SLACK_APP_TOKEN, config.SLACK_SIGNING_SECRET, config.SLACK_API_URL]);
    case 'discord':
      return JSON.stringify([config.DISCORD_BOT_TOKEN, config.DISCORD_API_URL, config.DISCORD_CHANNELS ?? []]);
    case 'whatsapp':
      return JSON.stringify([config.WHATSAPP_ENABLED]);
  }
}

/** The adapter for a configured channel. */
function adapterFor(channel: ChannelName, config: ChannelConfig, options: GatewayOptions): ChannelAdapter {
  const { key, logger } = options;
  switch (channel) {
    case 'telegram':
      return createTelegramAdapter({
        token: config.TELEGRAM_BOT_TOKEN!,
        ...(config.TELEGRAM_API_ROOT === undefined ? {} : { apiRoot: config.TELEGRAM_API_ROOT }),
        ...(config.TELEGRAM_WEBHOOK_URL === undefined ? {} : { webhook: { url: config.TELEGRAM_WEBHOOK_URL, secretToken: telegramWebhookSecret(key) } }),
        logger,
      });
    case 'slack':
      return createSlackAdapter({
        botToken: config.SLACK_BOT_TOKEN!,
        ...(config.SLACK_APP_TOKEN === undefined ? {} : { appToken: config.SLACK_APP_TOKEN }),
        ...(config.SLACK_SIGNING_SECRET === undefined ? {} : { signingSecret: config.SLACK_SIGNING_SECRET }),
        ...(config.SLACK_API_URL === undefined ? {} : { apiUrl: config.SLACK_API_URL }),
        logger,
      });
    case 'discord':
      return createDiscordAdapter({
        token: config.DISCORD_BOT_TOKEN!,
        ...(config.DISCORD_API_URL === undefined ? {} : { apiUrl: config.DISCORD_API_URL }),
        ...(config.DISCORD_CHANNELS === undefined ? {} : { boundChannels: config.DISCORD_CHANNELS }),
        logger,
      });
    case 'whatsapp':
      return createWhatsAppAdapter({
        database: options.database,
        key,
        logger,
        ...(options.whatsappSocketFactory === undefined ? {} : { socketFactory: options.whatsappSocketFactory }),
      });
  }
}

/** The largest webhook body read: a Telegram update is a few kilobytes. */
const webhookBodyLimit = 1024 * 1024;

function answer(response: ServerResponse, status: number, body?: unknown): void {
  if (response.headersSent) return;
  if (body === undefined) {
    response.writeHead(status).end();
    return;
  }
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A request's JSON body, or undefined when it is too large or not JSON. */
async function readJson(request: IncomingMessage): Promise<{ ok: true; body: unknown } | { ok: false; status: number }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > webhookBodyLimit) return { ok: false, status: 413 };
    chunks.push(chunk as Buffer);
  }
  try {
    return { ok: true, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown };
  } catch {
    return { ok: false, status: 400 };
  }
}

interface Running {
  channel: ChannelName;
  settings: string;
  adapter: ChannelAdapter;
  served: ServedChannel;
}

/**
 * The channel gateway: one adapter per configured channel (from the
 * environment, else from stored credentials), each served through the
 * conversation core (`serveChannel`), with the owner's pending approvals
 * pushed to the owner's handles. A channel that fails to start stops the
 * gateway with its reason, after stopping the others. Stored credentials are looked
 * at every few seconds: a channel whose settings changed is restarted, one
 * whose credentials were removed is stopped.
 */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const log = options.logger.child({ component: 'gateway' });
  const approvals = createApprovalDesk(options.database, options.audit, options.core.directory);
  const running = new Map<ChannelName, Running>();
  let lastVersion: string | null = null;
  let reloading: Promise<void> = Promise.resolve();

  const webhooks: ChannelWebhooks = {
    paths: [slackEventsPath, telegramWebhookPath],
    handle(request, response) {
      const path = (request.url ?? '').split('?')[0];
      if (path === slackEventsPath) {
        const listener = (running.get('slack')?.adapter as SlackAdapter | undefined)?.requestListener ?? null;
        if (listener === null) return answer(response, 404, { error: { code: 'not_found', message: 'Slack events over HTTP are not served here.' } });
        listener(request, response);
        return;
      }
      if (path === telegramWebhookPath) {
        const adapter = running.get('telegram')?.adapter as TelegramAdapter | undefined;
        if (adapter === undefined || adapter.mode !== 'webhook') return answer(response, 404, { error: { code: 'not_found', message: 'Telegram webhooks are not served here.' } });
        void readJson(request)
          .then(async (read) => answer(response, read.ok ? await adapter.handleWebhook({ headers: request.headers, body: read.body }) : read.status))
          .catch((error: unknown) => {
            log.error({ err: error }, 'a Telegram webhook request could not be handled');
            answer(response, 500);
          });
        return;
      }
      answer(response, 404);
    },
  };

  async function effectiveConfig(): Promise<ChannelConfig> {
    const bindings = await options.core.directory.listBindings();
    if (options.credentials === undefined) return withBoundChannels(options.config, bindings);
    return withBoundChannels(withStoredCredentials(options.config, await options.credentials.open()), bindings);
  }

  /** What changes when a stored setting does: the credentials' version and Discord's stored bound channels. */
  async function storedVersion(): Promise<string> {
    const [credentials, bindings] = await Promise.all([options.credentials?.version() ?? null, options.core.directory.listBindings()]);
    return JSON.stringify([credentials, storedBoundChannels(bindings)]);
  }

  async function startChannel(channel: ChannelName, config: ChannelConfig): Promise<void> {
    const adapter = adapterFor(channel, config, options);
    const served = await serveChannel({
      adapter,
      core: options.core,
      logger: options.logger,
      approvals,
      ...(options.approvalPollMs === undefined ? {} : { approvalPollMs: options.approvalPollMs }),
    });
    running.set(channel, { channel, settings: settingsOf(channel, config), adapter, served });
  }

  /** Start, restart or stop each channel to match the configuration. */
  async function apply(config: ChannelConfig, failHard: boolean): Promise<void> {
    for (const status of channelStatus(config)) {
      const current = running.get(status.channel);
      const settings = settingsOf(status.channel, config);
      if (current !== undefined && (!status.configured || current.settings !== settings)) {
        await current.served.stop();
        running.delete(status.channel);
        log.info({ channel: status.channel }, status.configured ? 'channel settings changed: restarting it' : 'channel no longer configured: stopped');
      }
      if (status.configured && !running.has(status.channel)) {
        try {
          await startChannel(status.channel, config);
        } catch (error) {
          if (failHard) throw error;
          log.error({ channel: status.channel, err: error }, 'channel could not start with its new settings; fix them with roster channel add or on the page');
        }
      }
    }
  }

  let ownServer: http.Server | null = null;
  let webhookUrl: string | null = null;
  let timer: NodeJS.Timeout | undefined;
  try {
    if (options.credentials !== undefined) lastVersion = await storedVersion();
    await apply(await effectiveConfig(), true);
    if ((options.webhooksOn ?? 'own-port') === 'own-port') {
      const server = http.createServer((request, response) => {
        if (request.method !== 'POST') return answer(response, 405);
        webhooks.handle(request, response);
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.config.GATEWAY_PORT, options.config.HOST, () => resolve());
      });
      ownServer = server;
      const address = server.address() as AddressInfo;
      webhookUrl = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
    }
  } catch (error) {
    await Promise.allSettled([...running.values()].map((entry) => entry.served.stop()));
    throw error;
  }

  async function reload(): Promise<void> {
    if (options.credentials === undefined) return;
    const version = await storedVersion();
    if (version === lastVersion) return;
    lastVersion = version;
    await apply(await effectiveConfig(), false);
  }
  const queueReload = () => {
    reloading = reloading.then(reload).catch((error: unknown) => log.error({ err: error }, 'stored channel credentials could not be read'));
    return reloading;
  };
  if (options.credentials !== undefined) {
    timer = setInterval(() => void queueReload(), options.reloadMs ?? 5000);
    timer.unref();
  }

  log.info({ channels: [...running.keys()], webhooks: webhookUrl }, 'gateway ready');
  return {
    get channels() {
      return [...running.keys()];
    },
    webhooks,
    webhookUrl,
    reload: queueReload,
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      await reloading;
      await Promise.allSettled([...running.values()].map((entry) => entry.served.stop()));
      running.clear();
      if (ownServer !== null) {
        ownServer.closeAllConnections();
        await new Promise<void>((resolve) => ownServer!.close(() => resolve()));
      }
      log.info('gateway stopped');
    },
  };
}
