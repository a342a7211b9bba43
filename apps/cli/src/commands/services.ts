import { channelPlugins } from '@roster/channel-registry';
import { answersGraceMs, createChannelCredentialStore } from '@roster/channel-host';
import { startGateway, type RunningGateway } from '@roster/gateway';
import { connectionFromUrl, createQueues, removePersonJobs, type QueueSet } from '@roster/jobs';
import { ensureRedis } from '@roster/redis';
import { createRuntime } from '@roster/runtime';
import { createLoginLink, createMetrics, createServer, exposureWarning, listen, loginLinkLifetimeMs, loginLinkUrl, serveMetrics } from '@roster/server';
import { startWorker } from '@roster/worker';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { openKeyedRuntime, stopAll, type StopStep } from '../runtime.js';

export type Service = 'server' | 'worker' | 'gateway';

/** The gateway's stop: its channels' grace for the answers under way, and a moment to release the leases. */
const gatewayDrainMs = answersGraceMs + 1_000;

/**
 * Run some of the three processes until asked to stop. `roster start` runs
 * all three in one process and may start a private Redis; the production
 * commands run one each and need the shared Redis of REDIS_URL.
 */
export async function runServices(args: string[], io: CommandIo, services: readonly Service[], allowPrivateRedis: boolean): Promise<number> {
  parseCommand(args, {});
  const { config, logger, database, key } = await openKeyedRuntime(io);
  const stops: StopStep[] = [() => database.close()];
  try {
    const redis = await ensureRedis({ url: config.REDIS_URL, dataDir: config.ROSTER_DATA_DIR, logger, allowPrivate: allowPrivateRedis });
    stops.push(() => redis.stop());
    // One set of metrics per process: its turns, its gateway's takeovers, and what is read at each scrape.
    const metrics = createMetrics({ logger });
    const runtime = await createRuntime({ config, database, logger, key, turnObserver: metrics.turns });
    // The server shows the queues in Bull Board; with a worker in this process, they are its own.
    let queues: QueueSet | undefined;
    if (services.includes('worker')) {
      const worker = await startWorker({ config, database, runtime, key, redisUrl: redis.url, logger });
      stops.push(() => worker.stop());
      queues = worker.jobs.queues;
    } else if (services.includes('server')) {
      const own = createQueues(connectionFromUrl(redis.url), config.ROSTER_QUEUE_PREFIX);
      stops.push(() => own.close());
      queues = own;
    }
    const credentials = createChannelCredentialStore(database, key, channelPlugins);
    let gateway: RunningGateway | undefined;
    if (services.includes('gateway')) {
      gateway = await startGateway({
        config,
        database,
        core: runtime.core,
        audit: runtime.memory.audit,
        logger,
        key,
        credentials,
        // With the server in this process, platforms post to its port; alone, the gateway listens on GATEWAY_PORT.
        webhooksOn: services.includes('server') ? 'server' : 'own-port',
        observer: metrics.gateway,
      });
      const running = gateway;
      // The messages it has taken are answered before the database closes: the platform will not send them again.
      stops.push(Object.assign(() => running.stop(), { withinMs: gatewayDrainMs }));
      io.holdStopWhile?.(() => running.answering());
    }
    metrics.watch({ database, ...(queues === undefined ? {} : { queues: Object.values(queues.queues) }), ...(gateway === undefined ? {} : { gateway }) });
    if (config.METRICS_PORT !== undefined) {
      const served = await serveMetrics(metrics, config.METRICS_PORT, logger);
      stops.push(() => served.close());
      io.out(`Metrics at ${served.url} (this machine only).`);
    }
    if (services.includes('server')) {
      const warning = exposureWarning(config);
      if (warning !== null) io.err(warning);
      const app = await createServer({
        config,
        database,
        runtime,
        redisUrl: redis.url,
        logger,
        key,
        metrics,
        channels: { credentials, ...(gateway === undefined ? {} : { webhooks: gateway.webhooks, changed: gateway.reload, holder: gateway.holder }) },
        ...(queues === undefined ? {} : { queues: Object.values(queues.queues), removePersonJobs: (personId: string) => removePersonJobs(queues, personId) }),
      });
      const address = await listen(app, config);
      stops.push(() => app.close());
      io.out(`Roster is running at ${address} (${database.kind} database${database.kind === 'embedded' ? ` in ${database.location}` : ''}${redis.private ? ', private Redis' : ''}). Press Ctrl+C to stop.`);
      // The first start of an installation makes its owner and hands them the way in.
      const { person, created } = await runtime.core.directory.ensureFirstOwner();
      if (created) {
        const link = await createLoginLink(database, person.id);
        // Set apart by blank lines, so it does not sit among the log lines.
        io.out('');
        io.out(`Made the first owner, "${person.name}". Sign in within ${loginLinkLifetimeMs / 60_000} minutes (the link works once): ${loginLinkUrl(config, link.token)}`);
        io.out('');
      } else {
        io.out('Sign in with a link from roster login-link.');
      }
    } else {
      io.out(`Roster ${services.join(' + ')} is running. Press Ctrl+C to stop.`);
    }
  } catch (error) {
    await stopAll(stops, logger);
    throw error;
  }
  const signal = await io.stopSignal;
  logger.info({ signal }, 'stopping');
  await stopAll(stops, logger);
  return exitCode.ok;
}
