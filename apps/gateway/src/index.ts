import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { channelPlugins } from '@roster/channel-registry';
import { answerWebhook, serveChannel, type ChannelAdapter, type ChannelCredentialStore, type ServedChannel } from '@roster/channels';
import type { InstallationKey, Logger } from '@roster/config';
import type { Core } from '@roster/core';
import type { Database } from '@roster/db';
import type { AuditLog } from '@roster/memory';
import { createApprovalDesk } from '@roster/jobs';
import { fenced } from './fenced.js';
import { createLeaseStore, leaseHolderName, type HeldLease } from './lease.js';
import { channelHost } from './check.js';
import { channelStates, defaultAccount, type ChannelConfig, type StoredSettings } from './settings.js';

export { channelHost, checkChannels, type ChannelCheck } from './check.js';
export { createLeaseStore, leaseHolderName, type HeldLease, type LeaseHolder, type LeaseStore } from './lease.js';
export { channelStates, serverAddress, type ChannelConfig, type ChannelState, type OpenedCredentials, type StoredBinding, type StoredSettings } from './settings.js';

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

/** A bot account as this gateway sees it: `receiving` (it holds the lease), `standby` (another gateway does), `failing` (it stopped or could not start, and waits to try again). */
export interface AccountState {
  channel: string;
  account: string;
  state: 'receiving' | 'standby' | 'failing';
}

/** Told of what a gateway does, for metrics; it must not throw. */
export interface GatewayObserver {
  /** This gateway took a bot account's lease that another process held (a standby taking over; a restarted installation taking its accounts back). */
  leaseTakenOver(channel: string, account: string): void;
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
  /**
   * How long a bot account's lease lasts unless renewed (default 15 s; it is
   * renewed every third of that). A standby gateway takes an account over at
   * most this long after its holder stopped renewing.
   */
  leaseMs?: number;
  /** Told of lease takeovers (the process's metrics). */
  observer?: GatewayObserver;
}

export interface RunningGateway {
  /** The channels this gateway serves now (it holds their accounts' leases). */
  readonly channels: readonly string[];
  /** The configured channels another gateway holds, which this one stands by for. */
  readonly standingBy: readonly string[];
  /** This process's name as a lease holder. */
  readonly holder: string;
  /** The webhook entry for the server of this process. */
  readonly webhooks: ChannelWebhooks;
  /** Where the gateway listens itself for webhooks (own-port), or null. */
  readonly webhookUrl: string | null;
  /** Each configured bot account's state in this gateway, now. */
  accounts(): AccountState[];
  /** Look at stored credentials (and Discord's stored bound channels) now and restart the channels whose settings changed. */
  reload(): Promise<void>;
  /** Whether a channel, running or stopping, is still answering messages it has taken. */
  answering(): boolean;
  stop(): Promise<void>;
}

interface Running {
  channel: string;
  settings: string;
  adapter: ChannelAdapter;
  served: ServedChannel;
  /** The account's lease, or null for a channel every gateway serves (a webhook). */
  lease: HeldLease | null;
  /** Until when this process may act for the account without renewing (its own clock, a margin under the lease). */
  validUntil: number;
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
  const standingBy = new Set<string>();
  /** Channels whose adapter stopped on its own, and when they may be tried again. */
  const resting = new Map<string, number>();
  /** Channels whose adapter could not start with their settings, until they start. */
  const failing = new Set<string>();
  /** The fencing token this process last held per channel: a token it did not hold means the account came from another process. */
  const tokens = new Map<string, number>();
  const leases = createLeaseStore(options.database);
  const holder = leaseHolderName();
  const leaseMs = options.leaseMs ?? 15_000;
  let lastVersion: string | null = null;
  let lastStored: StoredSettings | null = null;
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

  async function startChannel(channel: string, lease: HeldLease | null, adapter: ChannelAdapter, settings: string): Promise<void> {
    const entry = { validUntil: lease === null ? Number.POSITIVE_INFINITY : Date.now() + (leaseMs * 2) / 3 } as Running;
    const served = await serveChannel({
      adapter: lease === null ? adapter : fenced(adapter, () => Date.now() < entry.validUntil),
      core: options.core,
      logger: options.logger,
      approvals,
      ...(options.approvalPollMs === undefined ? {} : { approvalPollMs: options.approvalPollMs }),
      onStopped(reason) {
        log.error({ channel, reason }, 'the channel stopped receiving: letting go of its account, to try again in a minute');
        resting.set(channel, Date.now() + 60_000);
        void queue(() => letGo(channel));
      },
    });
    Object.assign(entry, { channel, settings, adapter, served, lease });
    running.set(channel, entry);
    failing.delete(channel);
  }

  /** Stop serving a channel and release its lease (when still ours). */
  const stopping = new Set<ServedChannel>(); // channels being stopped: they finish the answers under way first
  async function letGo(channel: string): Promise<void> {
    const current = running.get(channel);
    if (current === undefined) return;
    running.delete(channel);
    stopping.add(current.served);
    await current.served.stop().finally(() => stopping.delete(current.served));
    if (current.lease !== null) await leases.release(current.lease, holder).catch((error: unknown) => log.warn({ channel, err: error }, 'the lease could not be released; it lapses on its own'));
  }

  /** Start, restart or stop each channel to match the configuration and what is stored; take the leases that are free. */
  async function apply(stored: StoredSettings, failHard: boolean): Promise<void> {
    lastStored = stored;
    for (const state of channelStates(options.config, stored)) {
      const current = running.get(state.channel);
      const settings = state.setup.state === 'configured' ? JSON.stringify(state.setup.settings) : '';
      if (current !== undefined && (!state.configured || current.settings !== settings)) {
        await letGo(state.channel);
        log.info({ channel: state.channel }, state.configured ? 'channel settings changed: restarting it' : 'channel no longer configured: stopped');
      }
      if (state.setup.state !== 'configured') {
        standingBy.delete(state.channel);
        failing.delete(state.channel);
        continue;
      }
      if (running.has(state.channel) || (resting.get(state.channel) ?? 0) > Date.now()) continue;
      const lease = state.setup.exclusive === false ? null : await leases.acquire(state.channel, defaultAccount, holder, leaseMs);
      if (lease === null && state.setup.exclusive === false) {
        try {
          await startChannel(state.channel, null, await state.plugin.create(state.setup.settings, host), settings);
        } catch (error) {
          if (failHard) throw error;
          failing.add(state.channel);
          log.error({ channel: state.channel, err: error }, 'channel could not start with its new settings; fix them with roster channel add or on the page');
        }
        continue;
      }
      if (lease === null) {
        if (!standingBy.has(state.channel)) {
          const other = await leases.holderOf(state.channel, defaultAccount);
          log.info({ channel: state.channel, holder: other?.holder }, 'another gateway holds this bot account: standing by to take over when its lease lapses');
        }
        standingBy.add(state.channel);
        continue;
      }
      const tookOver = standingBy.delete(state.channel);
      // A new row starts at token 1; a token above it that this process did not hold was another process's.
      if (lease.token > 1 && tokens.get(state.channel) !== lease.token) tell(() => options.observer?.leaseTakenOver(state.channel, defaultAccount));
      tokens.set(state.channel, lease.token);
      try {
        await startChannel(state.channel, lease, await state.plugin.create(state.setup.settings, host), settings);
        log.info({ channel: state.channel, token: lease.token }, tookOver ? 'took over the bot account' : 'serving the bot account');
      } catch (error) {
        await leases.release(lease, holder).catch(() => undefined);
        if (failHard) throw error;
        failing.add(state.channel);
        log.error({ channel: state.channel, err: error }, 'channel could not start with its new settings; fix them with roster channel add or on the page');
      }
    }
  }

  /** Renew every held lease; a channel whose lease was lost stops at once. Then take any that lapsed. */
  async function heartbeat(): Promise<void> {
    for (const [channel, entry] of [...running]) {
      if (entry.lease === null) continue;
      const renewedAt = Date.now();
      const kept = await leases.renew(entry.lease, holder, leaseMs).catch((error: unknown) => {
        log.warn({ channel, err: error }, 'the lease could not be renewed');
        return null;
      });
      if (kept === true) entry.validUntil = renewedAt + (leaseMs * 2) / 3;
      else if (kept === false) {
        log.warn({ channel }, 'lost the bot account’s lease to another gateway: stopping it here');
        running.delete(channel);
        await entry.served.stop();
      }
    }
    if (lastStored !== null && (standingBy.size > 0 || resting.size > 0)) {
      for (const [channel, until] of resting) if (until <= Date.now()) resting.delete(channel);
      await apply(lastStored, false);
    }
  }

  /** Tell the observer, which must not stop the gateway. */
  function tell(what: () => void): void {
    try {
      what();
    } catch (error) {
      log.warn({ err: error }, 'the gateway observer failed');
    }
  }

  /** One change at a time: reloads, heartbeats and a stopped adapter's release never overlap. */
  function queue(work: () => Promise<void>): Promise<void> {
    reloading = reloading.then(work).catch((error: unknown) => log.error({ err: error }, 'the gateway could not apply a change'));
    return reloading;
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
    await Promise.allSettled([...running.keys()].map((channel) => letGo(channel)));
    throw error;
  }

  async function reload(): Promise<void> {
    if (options.credentials === undefined) return;
    const version = await storedVersion();
    if (version === lastVersion) return;
    lastVersion = version;
    await apply(await storedSettings(), false);
  }
  const queueReload = () => queue(reload);
  if (options.credentials !== undefined) {
    timer = setInterval(() => void queueReload(), options.reloadMs ?? 5000);
    timer.unref();
  }
  const beat = setInterval(() => void queue(heartbeat), leaseMs / 3);
  // A standby looks every second, so a gateway stopped cleanly (its leases released) is replaced within about one.
  const watch = setInterval(() => standingBy.size > 0 && lastStored !== null && void queue(() => apply(lastStored!, false)), Math.min(1000, leaseMs / 3));
  for (const timer of [beat, watch]) timer.unref();

  log.info({ channels: [...running.keys()], standingBy: [...standingBy], webhooks: webhookUrl }, 'gateway ready');
  return {
    get channels() {
      return [...running.keys()];
    },
    get standingBy() {
      return [...standingBy];
    },
    holder,
    webhooks,
    webhookUrl,
    accounts() {
      const states: AccountState[] = [];
      for (const channel of running.keys()) states.push({ channel, account: defaultAccount, state: 'receiving' });
      for (const channel of standingBy) if (!running.has(channel)) states.push({ channel, account: defaultAccount, state: 'standby' });
      for (const channel of new Set([...failing, ...resting.keys()])) if (!running.has(channel)) states.push({ channel, account: defaultAccount, state: 'failing' });
      return states;
    },
    reload: queueReload,
    answering: () => [...running.values()].some((entry) => entry.served.answering()) || [...stopping].some((served) => served.answering()),
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      for (const timer of [beat, watch]) clearInterval(timer);
      await reloading;
      // Released at once: a standby gateway takes the accounts over at its next heartbeat, not when the leases lapse.
      await Promise.allSettled([...running.keys()].map((channel) => letGo(channel)));
      if (ownServer !== null) {
        ownServer.closeAllConnections();
        await new Promise<void>((resolve) => ownServer!.close(() => resolve()));
      }
      log.info('gateway stopped');
    },
  };
}
