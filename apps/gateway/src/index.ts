import type { Server } from 'node:http';
import { channelPlugins } from '@roster/channel-registry';
import { answerWebhook, type ChannelAdapter } from '@roster/channels';
import { serveChannel, type ChannelCredentialStore, type ServedChannel } from '@roster/channel-host';
import type { InstallationKey, Logger } from '@roster/config';
import type { Core } from '@roster/core';
import type { Database } from '@roster/db';
import type { AuditLog } from '@roster/memory';
import { createApprovalDesk } from '@roster/learning';
import { withoutSecrets } from './accounts.js';
import { channelHost } from './checks.js';
import { fenced } from './fenced.js';
import { createLeaseStore, leaseHolderName, type HeldLease } from './lease.js';
import { channelStates, type ChannelConfig, type StoredSettings } from './settings.js';
import { listenForWebhooks, type ChannelWebhooks } from './webhooks.js';
import { createShardCounts, fairShare, unitsOf, type Unit } from './units.js';

export { channelHost, checkChannels, type ChannelCheck } from './checks.js';
export { createLeaseStore, leaseHolderName, type HeldLease, type LeaseHolder, type LeaseStore } from './lease.js';
export { describeAccounts, holderParts, type AccountReport } from './accounts.js';
export { createLinkedDeviceStore } from './linked-devices.js';
export type { ChannelWebhooks } from './webhooks.js';
export { channelStates, serverAddress, type ChannelConfig, type ChannelState, type OpenedCredentials, type StoredBinding, type StoredSettings } from './settings.js';

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
  unit: Unit;
  settings: string;
  adapter: ChannelAdapter;
  served: ServedChannel;
  /** The unit's lease, or null for a channel every gateway serves (a webhook). */
  lease: HeldLease | null;
  /** Until when this process may act for the account without renewing (its own clock, a margin under the lease). */
  validUntil: number;
}

/**
 * The channel gateway: one adapter per configured channel (from the
 * environment, else from stored credentials), or one per part of its
 * account (Discord's shards), each served through the conversation core
 * (`serveChannel`) under its own lease, with the owner's pending approvals
 * pushed to the owner's handles. A channel that fails to start stops the
 * gateway with its reason, after stopping the others. Stored credentials are
 * looked at every few seconds: a channel whose settings changed is
 * restarted, one whose credentials were removed is stopped.
 */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const log = options.logger.child({ component: 'gateway' });
  const approvals = createApprovalDesk(options.database, options.audit, options.core.directory);
  /** What this gateway receives now, by unit key (the channel, or `discord shard 1/2`). */
  const running = new Map<string, Running>();
  const standingBy = new Map<string, Unit>();
  /** Units whose adapter stopped on its own, and when they may be tried again. */
  const resting = new Map<string, { unit: Unit; until: number }>();
  /** Units whose adapter could not start with their settings, until they start. */
  const failing = new Map<string, Unit>();
  /** The fencing token this process last held per unit: a token it did not hold means the account came from another process. */
  const tokens = new Map<string, number>();
  /** Channels this gateway stands for among several (sharded ones): counted by the others to split the shards. */
  const present = new Set<string>();
  const leases = createLeaseStore(options.database);
  const holder = leaseHolderName();
  const leaseMs = options.leaseMs ?? 15_000;
  let lastVersion: string | null = null;
  let lastStored: StoredSettings | null = null;
  let reloading: Promise<void> = Promise.resolve();

  const host = channelHost({ logger: options.logger, key: options.key, database: options.database, ...(options.services === undefined ? {} : { services: options.services }) });
  const shardCounts = createShardCounts(host);
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

  async function startUnit(unit: Unit, lease: HeldLease | null, adapter: ChannelAdapter, settings: string): Promise<void> {
    const entry = { validUntil: lease === null ? Number.POSITIVE_INFINITY : Date.now() + (leaseMs * 2) / 3 } as Running;
    const served = await serveChannel({
      adapter: lease === null ? adapter : fenced(adapter, () => Date.now() < entry.validUntil),
      // What its turns store is checked against the lease in the storing transaction: a gateway paused past it stores nothing.
      ...(lease === null ? {} : { fence: { channel: unit.channel, account: lease.account, holder, token: lease.token } }),
      core: options.core,
      logger: options.logger,
      approvals,
      // Of a sharded account, shard 0 (which receives the direct messages) pushes the owner's approvals.
      pushesApprovals: unit.shard === undefined || unit.shard.id === 0,
      ...(options.approvalPollMs === undefined ? {} : { approvalPollMs: options.approvalPollMs }),
      onStopped(reason) {
        log.error({ channel: unit.channel, account: unit.account, reason }, 'the channel stopped receiving: letting go of its account, to try again in a minute');
        resting.set(unit.key, { unit, until: Date.now() + 60_000 });
        void queue(() => letGo(unit.key, withoutSecrets(reason, settings)));
      },
    });
    Object.assign(entry, { unit, settings, adapter, served, lease });
    running.set(unit.key, entry);
    failing.delete(unit.key);
  }

  /** Stop serving a unit and release its lease (when still ours). */
  const stopping = new Set<ServedChannel>(); // units being stopped: they finish the answers under way first
  async function letGo(key: string, error?: string): Promise<void> {
    const current = running.get(key);
    if (current === undefined) return;
    running.delete(key);
    stopping.add(current.served);
    // It still holds the account while it answers what it took: renewed, so that those answers are not fenced off before the release.
    const renewing = current.lease === null ? undefined : setInterval(() => void renew(current), leaseMs / 3);
    await current.served.stop().finally(() => {
      clearInterval(renewing);
      stopping.delete(current.served);
    });
    if (current.lease !== null) await leases.release(current.lease, holder, error).catch((error: unknown) => log.warn({ channel: current.unit.channel, err: error }, 'the lease could not be released; it lapses on its own'));
  }

  /** Start, restart or stop each channel to match the configuration and what is stored; take the leases that are free, up to this gateway's share. */
  async function apply(stored: StoredSettings, failHard: boolean): Promise<void> {
    lastStored = stored;
    for (const state of channelStates(options.config, stored)) {
      const { channel } = state;
      const settings = state.setup.state === 'configured' ? JSON.stringify(state.setup.settings) : '';
      for (const current of [...running.values()].filter((entry) => entry.unit.channel === channel)) {
        if (state.configured && current.settings === settings) continue;
        await letGo(current.unit.key);
        log.info({ channel, account: current.unit.account }, state.configured ? 'channel settings changed: restarting it' : 'channel no longer configured: stopped');
      }
      const forget = (keep: (unit: Unit) => boolean) => {
        for (const map of [standingBy, failing]) for (const [key, unit] of map) if (unit.channel === channel && !keep(unit)) map.delete(key);
      };
      if (state.setup.state !== 'configured') {
        forget(() => false);
        if (present.delete(channel)) await leases.withdraw([channel], holder).catch(() => undefined);
        continue;
      }
      if ((resting.get(channel)?.until ?? 0) > Date.now()) continue;
      let units: Unit[];
      try {
        units = unitsOf(channel, await shardCounts.count(state, settings));
      } catch (error) {
        if (failHard) throw error;
        resting.set(channel, { unit: unitsOf(channel, 1)[0]!, until: Date.now() + 60_000 });
        log.error({ channel, err: error }, 'the channel’s shard count could not be learnt: trying again in a minute');
        continue;
      }
      forget((unit) => units.some((candidate) => candidate.key === unit.key));
      if (state.setup.exclusive === false) {
        const unit = units[0]!;
        if (running.has(unit.key)) continue;
        try {
          await startUnit(unit, null, await state.plugin.create(state.setup.settings, host), settings);
        } catch (error) {
          if (failHard) throw error;
          failing.set(unit.key, unit);
          log.error({ channel, err: error }, 'channel could not start with its new settings; fix them with roster channel add or on the page');
        }
        continue;
      }
      // Of an account received in parts, this gateway takes its share: the gateways standing for the channel split them.
      let share = units.length;
      if (units.length > 1) {
        await leases.announce(channel, holder, leaseMs);
        present.add(channel);
        share = fairShare(units.length, await leases.present(channel));
      }
      let held = units.filter((unit) => running.has(unit.key)).length;
      for (const unit of units) {
        if (running.has(unit.key) || (resting.get(unit.key)?.until ?? 0) > Date.now()) continue;
        const lease = held < share ? await leases.acquire(channel, unit.account, holder, leaseMs) : null;
        if (lease === null) {
          if (!standingBy.has(unit.key)) {
            const other = await leases.holderOf(channel, unit.account);
            log.info({ channel, account: unit.account, holder: other?.holder ?? null }, 'another gateway holds this bot account: standing by to take over when its lease lapses');
          }
          standingBy.set(unit.key, unit);
          continue;
        }
        const tookOver = standingBy.delete(unit.key);
        // A new row starts at token 1; a token above it that this process did not hold was another process's.
        if (lease.token > 1 && tokens.get(unit.key) !== lease.token) tell(() => options.observer?.leaseTakenOver(channel, unit.account));
        tokens.set(unit.key, lease.token);
        try {
          await startUnit(unit, lease, await state.plugin.create(state.setup.settings, host, unit.shard), settings);
          held += 1;
          log.info({ channel, account: unit.account, token: lease.token }, tookOver ? 'took over the bot account' : 'serving the bot account');
        } catch (error) {
          await leases.release(lease, holder, withoutSecrets(`it could not start: ${(error as Error).message}`, settings)).catch(() => undefined);
          if (failHard) throw error;
          // Not tried again with these settings for a minute: a standby's second-by-second look would retry it at once.
          failing.set(unit.key, unit);
          if (units.length > 1) resting.set(unit.key, { unit, until: Date.now() + 60_000 });
          log.error({ channel, account: unit.account, err: error }, 'channel could not start with its new settings; fix them with roster channel add or on the page');
        }
      }
      // More than its share (another gateway came): one part is let go, for a gateway below its share to take within a second.
      if (held > share) {
        const last = units.filter((unit) => running.has(unit.key)).at(-1)!;
        log.info({ channel, account: last.account, share }, 'another gateway stands for this bot account: handing it one of the shards');
        await letGo(last.key);
        standingBy.set(last.key, last);
      }
    }
  }

  /** Renew a unit's lease; its sends stay valid for two thirds of the lease from then. Resolves to false when another gateway holds it now. */
  async function renew(entry: Running): Promise<boolean | null> {
    const renewedAt = Date.now();
    const kept = await leases.renew(entry.lease!, holder, leaseMs).catch((error: unknown) => {
      log.warn({ channel: entry.unit.channel, err: error }, 'the lease could not be renewed');
      return null;
    });
    if (kept === true) entry.validUntil = renewedAt + (leaseMs * 2) / 3;
    return kept;
  }

  /** Renew every held lease (and this gateway's presence); a unit whose lease was lost stops at once. Then take any that lapsed. */
  async function heartbeat(): Promise<void> {
    for (const channel of present) await leases.announce(channel, holder, leaseMs).catch((error: unknown) => log.warn({ channel, err: error }, 'the gateway’s presence could not be renewed'));
    for (const [key, entry] of [...running]) {
      if (entry.lease === null) continue;
      if ((await renew(entry)) === false) {
        log.warn({ channel: entry.unit.channel, account: entry.unit.account }, 'lost the bot account’s lease to another gateway: stopping it here');
        running.delete(key);
        await entry.served.stop();
      }
    }
    for (const [key, { until }] of resting) if (until <= Date.now()) resting.delete(key);
    if (lastStored !== null && (standingBy.size > 0 || resting.size > 0 || present.size > 0)) await apply(lastStored, false);
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

  let ownServer: Server | null = null;
  let webhookUrl: string | null = null;
  let timer: NodeJS.Timeout | undefined;
  try {
    if (options.credentials !== undefined) lastVersion = await storedVersion();
    await apply(await storedSettings(), true);
    if ((options.webhooksOn ?? 'own-port') === 'own-port') ({ server: ownServer, url: webhookUrl } = await listenForWebhooks(webhooks, options.config));
  } catch (error) {
    await Promise.allSettled([...running.keys()].map((key) => letGo(key)));
    await leases.withdraw([...present], holder).catch(() => undefined);
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

  const channelsOf = (units: Iterable<Unit>) => [...new Set([...units].map((unit) => unit.channel))];
  log.info({ channels: channelsOf([...running.values()].map((entry) => entry.unit)), standingBy: [...standingBy.keys()], webhooks: webhookUrl }, 'gateway ready');
  return {
    get channels() {
      return channelsOf([...running.values()].map((entry) => entry.unit));
    },
    get standingBy() {
      return channelsOf([...standingBy.values()].filter((unit) => !running.has(unit.key)));
    },
    holder,
    webhooks,
    webhookUrl,
    accounts() {
      const states: AccountState[] = [];
      for (const { unit } of running.values()) states.push({ channel: unit.channel, account: unit.account, state: 'receiving' });
      for (const unit of standingBy.values()) if (!running.has(unit.key)) states.push({ channel: unit.channel, account: unit.account, state: 'standby' });
      const down = new Map([...failing, ...[...resting].map(([key, { unit }]) => [key, unit] as const)]);
      for (const [key, unit] of down) if (!running.has(key)) states.push({ channel: unit.channel, account: unit.account, state: 'failing' });
      return states;
    },
    reload: queueReload,
    answering: () => [...running.values()].some((entry) => entry.served.answering()) || [...stopping].some((served) => served.answering()),
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      for (const timer of [beat, watch]) clearInterval(timer);
      await reloading;
      // Withdrawn and released at once: a standby gateway takes the accounts over within a second, not when the leases lapse.
      await leases.withdraw([...present], holder).catch(() => undefined);
      await Promise.allSettled([...running.keys()].map((key) => letGo(key)));
      if (ownServer !== null) {
        ownServer.closeAllConnections();
        await new Promise<void>((resolve) => ownServer!.close(() => resolve()));
      }
      log.info('gateway stopped');
    },
  };
}
