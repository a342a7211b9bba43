import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { channelPlugins } from '@roster/channel-registry';
import { answerWebhook, serveChannel, type ChannelAdapter, type ChannelCredentialStore, type ServedChannel } from '@roster/channels';
import type { InstallationKey, Logger } from '@roster/config';
import type { ChannelHost } from '@roster/contracts';
import type { Core } from '@roster/core';
import type { Database } from '@roster/db';
import type { AuditLog } from '@roster/memory';
import { createApprovalDesk } from '@roster/jobs';
import { channelStates, type ChannelConfig, type StoredSettings } from './settings.js';

export { channelStates, serverAddress, type ChannelConfig, type ChannelState, type OpenedCredentials, type StoredBinding, type StoredSettings } from './settings.js';

/** A channel as `roster doctor` reports it. */
export interface ChannelCheck {
  channel: string;
  status: 'ok' | 'fail' | 'off';
  detail: string;
}

/** What a plugin is given: the logger, secrets derived from the installation key, and the services of this process. */
export function channelHost(options: { logger: Logger; key?: InstallationKey; database?: Database; services?: Readonly<Record<string, unknown>> }): ChannelHost {
  const { key } = options;
  return {
    logger: options.logger,
    derive: (purpose) => {
      if (key === undefined) throw new Error('The installation key could not be loaded: roster doctor says why.');
      return key.derive(purpose);
    },
    services: { ...(options.database === undefined ? {} : { database: options.database }), ...(key === undefined ? {} : { key }), ...options.services },
  };
}

/**
 * Each registered channel checked against its platform (its plugin's
 * `check`: a token tried, a link read), called ok only when the platform
 * takes it; one that is not configured is `off`, one half configured `fail`.
 */
export async function checkChannels(
  config: ChannelConfig,
  options: { stored?: StoredSettings; timeoutMs?: number; database?: Database; key?: InstallationKey; logger: Logger },
): Promise<ChannelCheck[]> {
  const host = channelHost({ logger: options.logger, ...(options.key === undefined ? {} : { key: options.key }), ...(options.database === undefined ? {} : { database: options.database }) });
  return Promise.all(
    channelStates(config, options.stored).map(async ({ channel, plugin, setup }): Promise<ChannelCheck> => {
      if (setup.state === 'off') return { channel, status: 'off', detail: setup.detail };
      if (setup.state === 'incomplete') return { channel, status: 'fail', detail: setup.detail };
      const check = await plugin.check(setup.settings, host, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }).catch((error: unknown) => ({
        status: 'fail' as const,
        detail: (error as Error).message,
      }));
      return { channel, status: check.status, detail: check.status === 'ok' && setup.mode !== undefined ? `${check.detail}; ${setup.mode}` : check.detail };
    }),
  );
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
  /** The installation key: channels derive their secrets from it (a webhook's), and seal what they keep with it. */
  key: InstallationKey;
  /** More services for the channels' plugins, by name (a test gives WhatsApp a socket whose far side is a fake: `whatsappSocketFactory`). */
  services?: Readonly<Record<string, unknown>>;
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
  readonly channels: readonly string[];
  /** The webhook entry for the server of this process. */
  readonly webhooks: ChannelWebhooks;
  /** Where the gateway listens itself for webhooks (own-port), or null. */
  readonly webhookUrl: string | null;
  /** Look at stored credentials (and Discord's stored bound channels) now and restart the channels whose settings changed. */
  reload(): Promise<void>;
  stop(): Promise<void>;
}

interface Running {
  channel: string;
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
  const running = new Map<string, Running>();
  let lastVersion: string | null = null;
  let reloading: Promise<void> = Promise.resolve();

  const host = channelHost({ logger: options.logger, key: options.key, database: options.database, ...(options.services === undefined ? {} : { services: options.services }) });
  const routes = channelPlugins.flatMap((plugin) => (plugin.webhooks ?? []).map((webhook) => ({ plugin, webhook })));
  const webhooks: ChannelWebhooks = {
    paths: routes.map(({ webhook }) => webhook.path),
    handle(request, response) {
      const path = (request.url ?? '').split('?')[0];
      const route = routes.find(({ webhook }) => webhook.path === path);
      if (route === undefined) return answerWebhook(response, 404);
      const adapter = running.get(route.plugin.name)?.adapter;
      if (adapter !== undefined && route.webhook.handle(adapter, request, response)) return;
      answerWebhook(response, 404, { error: { code: 'not_found', message: `${route.plugin.label} webhooks are not served here.` } });
    },
  };

  async function storedSettings(): Promise<StoredSettings> {
    const [credentials, bindings] = await Promise.all([options.credentials?.open() ?? {}, options.core.directory.listBindings()]);
    return { credentials, bindings };
  }

  /** What changes when a stored setting does: the credentials' version and the bindings' bound rooms. */
  async function storedVersion(): Promise<string> {
    const [credentials, bindings] = await Promise.all([options.credentials?.version() ?? null, options.core.directory.listBindings()]);
    return JSON.stringify([credentials, bindings.map((binding) => [binding.channel, binding.account, binding.boundChannels])]);
  }

  async function startChannel(channel: string, adapter: ChannelAdapter, settings: string): Promise<void> {
    const served = await serveChannel({
      adapter,
      core: options.core,
      logger: options.logger,
      approvals,
      ...(options.approvalPollMs === undefined ? {} : { approvalPollMs: options.approvalPollMs }),
    });
    running.set(channel, { channel, settings, adapter, served });
  }

  /** Start, restart or stop each channel to match the configuration and what is stored. */
  async function apply(stored: StoredSettings, failHard: boolean): Promise<void> {
    for (const state of channelStates(options.config, stored)) {
      const current = running.get(state.channel);
      const settings = state.setup.state === 'configured' ? JSON.stringify(state.setup.settings) : '';
      if (current !== undefined && (!state.configured || current.settings !== settings)) {
        await current.served.stop();
        running.delete(state.channel);
        log.info({ channel: state.channel }, state.configured ? 'channel settings changed: restarting it' : 'channel no longer configured: stopped');
      }
      if (state.setup.state === 'configured' && !running.has(state.channel)) {
        try {
          await startChannel(state.channel, await state.plugin.create(state.setup.settings, host), settings);
        } catch (error) {
          if (failHard) throw error;
          log.error({ channel: state.channel, err: error }, 'channel could not start with its new settings; fix them with roster channel add or on the page');
        }
      }
    }
  }

  let ownServer: http.Server | null = null;
  let webhookUrl: string | null = null;
  let timer: NodeJS.Timeout | undefined;
  try {
    if (options.credentials !== undefined) lastVersion = await storedVersion();
    await apply(await storedSettings(), true);
    if ((options.webhooksOn ?? 'own-port') === 'own-port') {
      const server = http.createServer((request, response) => {
        if (request.method !== 'POST') return answerWebhook(response, 405);
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
    await apply(await storedSettings(), false);
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
