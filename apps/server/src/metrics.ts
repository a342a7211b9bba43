import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@roster/config';
import type { TurnObserver } from '@roster/core';
import type { Database } from '@roster/db';
import { RosterError } from '@roster/errors';
import { hostName } from './access.js';
import { createLeaseStore, type AccountState, type GatewayObserver } from '@roster/gateway';
import { isJobName } from '@roster/contracts';
import { outboxBacklog } from '@roster/db';
import type { Queue } from 'bullmq';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What is read at each scrape, in the process that serves the metrics. */
export interface MetricSources {
  /** The outbox's backlog and the bot accounts' leases are read here, through the admin path. */
  database: Database;
  /** The job queues whose depth is read from BullMQ. */
  queues?: readonly Queue[];
  /** This process's gateway: the accounts it stands by for or fails on, under its holder name. */
  gateway?: { readonly holder: string; accounts(): AccountState[] };
}

/**
 * A process's metrics, in Prometheus' text format. Turns and lease
 * takeovers are counted as they happen (the core and the gateway tell
 * `turns` and `gateway`; neither imports prom-client); queue depth, the
 * outbox's backlog and the accounts' states are read when scraped. Labels
 * hold doors, engines, queues, channels, accounts and holders: never a
 * person, a name or a message's words.
 */
export interface Metrics {
  readonly turns: TurnObserver;
  readonly gateway: GatewayObserver;
  /** Where the scrape-time readings come from; set once the process has them. */
  watch(sources: MetricSources): void;
  /** The text exposition, with every reading taken now. */
  render(): Promise<string>;
  readonly contentType: string;
}

/** Turn latency buckets, in seconds: a local engine answers in well under a second, a remote one in several. */
const turnBuckets = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120];

/** The job states whose counts are read from BullMQ. */
const jobStates = ['waiting', 'active', 'delayed', 'failed'] as const;

/** How long a scrape waits for Redis or the database before it reports that source down. */
const readTimeoutMs = 3000;

/**
 * An engine reference as a label: its kind and model. An
 * `openai-compatible:URL#model` reference keeps only the model, so no
 * address of a private server goes into the label.
 */
export function engineLabel(reference: string | null): string {
  if (reference === null) return 'none';
  const colon = reference.indexOf(':');
  const hash = reference.lastIndexOf('#');
  if (colon !== -1 && hash > colon) return `${reference.slice(0, colon)}:${reference.slice(hash + 1)}`;
  return reference;
}

function withDeadline<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${readTimeoutMs} ms`)), readTimeoutMs);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

export function createMetrics(options: { logger?: Logger } = {}): Metrics {
  const log = options.logger?.child({ component: 'metrics' });
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const turns = new Counter({
    name: 'roster_turns_total',
    help: 'Turns handled, by door (web, cli, telegram…), engine (none when no agent was asked) and outcome (answered, engine_failed, notice, refused, duplicate, rejected, failed).',
    labelNames: ['door', 'engine', 'outcome'] as const,
    registers: [registry],
  });
  const turnSeconds = new Histogram({
    name: 'roster_turn_duration_seconds',
    help: 'Seconds from the start of a turn to its agent’s answer (or to its end when no agent was asked), by door and engine.',
    labelNames: ['door', 'engine'] as const,
    buckets: turnBuckets,
    registers: [registry],
  });
  const engineFailures = new Counter({
    name: 'roster_engine_failures_total',
    help: 'Engine calls of a turn that failed (the person was told), by door, engine and error code.',
    labelNames: ['door', 'engine', 'code'] as const,
    registers: [registry],
  });
  const takeovers = new Counter({
    name: 'roster_lease_takeovers_total',
    help: 'Bot accounts this process’s gateway took over from another process (a standby after a lapse or a clean stop; a restart taking its accounts back).',
    labelNames: ['channel', 'account'] as const,
    registers: [registry],
  });
  const queueJobs = new Gauge({
    name: 'roster_queue_jobs',
    help: 'Jobs per queue and state (waiting, active, delayed, failed), read from BullMQ at scrape time.',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
  });
  const outboxPending = new Gauge({
    name: 'roster_outbox_pending',
    help: 'Outbox rows not yet handed to Redis, per queue, read at scrape time.',
    labelNames: ['queue'] as const,
    registers: [registry],
  });
  const outboxOldest = new Gauge({
    name: 'roster_outbox_oldest_pending_seconds',
    help: 'Age of the oldest outbox row not yet handed to Redis (0 when none), read at scrape time.',
    registers: [registry],
  });
  const channelState = new Gauge({
    name: 'roster_channel_state',
    help: 'Bot accounts by state: receiving (the holder of the lease), standby (a gateway waiting to take over), failing (a gateway whose channel stopped or could not start), unserved (a lapsed lease no gateway holds). 1 per account, state and holder.',
    labelNames: ['channel', 'account', 'holder', 'state'] as const,
    registers: [registry],
  });
  const sourceUp = new Gauge({
    name: 'roster_metrics_source_up',
    help: 'Whether the last scrape could read a source (queues, outbox, leases): 1 yes, 0 no (its gauges are then absent).',
    labelNames: ['source'] as const,
    registers: [registry],
  });
  for (const source of ['queues', 'outbox', 'leases']) sourceUp.set({ source }, 0);

  let sources: MetricSources | null = null;
  /** The readings under way: scrapes at once share them, so that one's reset never empties another's answer. */
  let refreshing: Promise<void> | null = null;

  async function read(source: string, work: () => Promise<void>): Promise<void> {
    try {
      await withDeadline(work(), source);
      sourceUp.set({ source }, 1);
    } catch (error) {
      sourceUp.set({ source }, 0);
      log?.warn({ source, err: error }, 'a metrics source could not be read');
    }
  }

  /** Take every scrape-time reading; a source that fails is reported down, the rest still answer. */
  async function refresh(): Promise<void> {
    if (sources === null) return;
    const { database, queues = [], gateway } = sources;
    await Promise.all([
      read('queues', async () => {
        const counts = await Promise.all(queues.map(async (queue) => ({ queue: queue.name, counts: await queue.getJobCounts(...jobStates) })));
        queueJobs.reset();
        for (const { queue, counts: byState } of counts) for (const state of jobStates) queueJobs.set({ queue, state }, byState[state] ?? 0);
      }),
      read('outbox', async () => {
        const backlog = await outboxBacklog(database);
        outboxPending.reset();
        for (const queue of queues) outboxPending.set({ queue: queue.name }, 0);
        for (const row of backlog) outboxPending.inc({ queue: isJobName(row.queue) ? row.queue : 'other' }, row.pending);
        outboxOldest.set(Math.max(0, ...backlog.map((row) => row.oldestSeconds)));
      }),
      read('leases', async () => {
        const leases = await createLeaseStore(database).list();
        channelState.reset();
        for (const lease of leases) {
          channelState.set({ channel: lease.channel, account: lease.account, holder: lease.held ? lease.holder : '', state: lease.held ? 'receiving' : 'unserved' }, 1);
        }
        // This process's own view: the accounts it stands by for or fails on, and the ones it serves without a lease (webhooks).
        for (const account of gateway?.accounts() ?? []) {
          if (account.state === 'receiving' && leases.some((lease) => lease.held && lease.channel === account.channel && lease.account === account.account)) continue;
          channelState.set({ channel: account.channel, account: account.account, holder: gateway!.holder, state: account.state }, 1);
        }
      }),
    ]);
  }

  return {
    contentType: registry.contentType,
    turns: {
      turnEnded(record) {
        const engine = engineLabel(record.engine);
        turns.inc({ door: record.door, engine, outcome: record.outcome });
        turnSeconds.observe({ door: record.door, engine }, record.seconds);
        if (record.outcome === 'engine_failed') engineFailures.inc({ door: record.door, engine, code: record.failure ?? 'unknown' });
      },
    },
    gateway: {
      leaseTakenOver(channel, account) {
        takeovers.inc({ channel, account });
      },
    },
    watch(next) {
      sources = next;
    },
    async render() {
      refreshing ??= refresh().finally(() => (refreshing = null));
      await refreshing;
      return registry.metrics();
    },
  };
}

/** The names a loopback metrics port answers to: a page of another name resolving here (DNS rebinding) reads nothing. */
const loopbackNames = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A process's metrics served alone, on the loopback interface only (METRICS_PORT): GET /metrics, no sign-in. */
export async function serveMetrics(metrics: Metrics, port: number, logger?: Logger): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (!loopbackNames.has(hostName(request.headers.host ?? ''))) {
      response.writeHead(421, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'host_not_allowed', message: 'Metrics are served to this machine only: ask for 127.0.0.1 or localhost.' } }));
      return;
    }
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'not_found', message: 'Only GET /metrics is served here.' } }));
      return;
    }
    metrics.render().then(
      (text) => response.writeHead(200, { 'content-type': metrics.contentType }).end(request.method === 'HEAD' ? undefined : text),
      (error: unknown) => {
        logger?.error({ err: error }, 'metrics could not be rendered');
        response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'internal', message: 'The metrics could not be read; see the log.' } }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) =>
      reject(new RosterError('port_unavailable', `Cannot serve metrics on 127.0.0.1:${port}: ${error.message}. Stop what uses it, or set METRICS_PORT to another port.`, { cause: error })),
    );
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
