import type { Logger } from '@roster/config';
import { RosterError } from '@roster/errors';
import { QueueEvents, UnrecoverableError, WaitingError, Worker, type ConnectionOptions, type Job, type RedisOptions } from 'bullmq';
import { Cluster, Redis as IORedis } from 'ioredis';
import { ClosingSafeConnection, isClusterConnection, ownClient } from './connection.js';
import { handlers, type JobDependencies } from './handlers.js';
import { runAsJob } from '@roster/learning';
import { createQueues, jobNames, payloadSchemas, type JobName, type QueueSet } from './queues.js';
import { startRelayLoop } from './relay.js';

export interface ScheduleOptions {
  /** The local hour of the nightly jobs (default 3). */
  hour: number;
  /** An IANA time zone (default the process's own). */
  timezone: string;
  /** How often idle conversations are looked for, for extraction and episodes (default 10 minutes). */
  idleCheckMs: number;
  /** How long a conversation is quiet before extraction and episodes (default 30 minutes). */
  idleMinutes: number;
  /** How often the embedded database is vacuumed (default 60 minutes; a server Postgres vacuums itself). */
  vacuumEveryMs: number;
  /** Take the nightly backup (at the nightly hour, after the other nightly jobs); off unless said. */
  backup?: boolean;
}

export interface JobWorkerOptions extends JobDependencies {
  connection: ConnectionOptions;
  prefix?: string;
  schedule?: Partial<ScheduleOptions>;
  /** Register the schedulers (default true). */
  schedulers?: boolean;
  /** Relay the outbox from this process (default true). */
  relay?: boolean;
  relayIntervalMs?: number;
  concurrency?: number;
  /** How long a job's lock lasts before a crashed worker's job is taken up again (default 30 s). */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
}

export interface JobWorker {
  queues: QueueSet;
  stop(): Promise<void>;
}

/**
 * Thrown from a job's progress report once its worker is stopping. Handlers
 * report progress only after a unit of work is committed (a fade batch, a
 * mirror case, an embedding batch), so stopping there loses nothing.
 */
class JobInterrupted extends Error {
  constructor(reason: unknown) {
    super(`interrupted: ${String(reason ?? 'the worker is stopping')}`);
    this.name = 'JobInterrupted';
  }
}

/**
 * Run one job's handler with its payload checked; a non-retryable failure
 * becomes BullMQ's UnrecoverableError. When `signal` aborts (the worker is
 * stopping), a job that reports progress stops at its next report and goes
 * back to waiting, its committed work kept and no attempt spent, so that a
 * stop does not wait for a long job to end (nor get killed waiting).
 */
export async function processJob(deps: JobDependencies, job: Job, token?: string, signal?: AbortSignal): Promise<Record<string, unknown>> {
  const name = job.queueName as JobName;
  const parsed = payloadSchemas[name].safeParse(job.data ?? {});
  if (!parsed.success) throw new UnrecoverableError(`Bad payload for ${name}: ${parsed.error.message}`);
  try {
    return await runAsJob(name, () =>
      (handlers[name] as (d: JobDependencies, p: unknown, r: { progress: (value: number | Record<string, unknown>) => Promise<void> }) => Promise<Record<string, unknown>>)(deps, parsed.data, {
        progress: async (value) => {
          await job.updateProgress(value);
          if (signal?.aborted === true) throw new JobInterrupted(signal.reason);
        },
      }),
    );
  } catch (error) {
    if (error instanceof JobInterrupted && token !== undefined) {
      // Back to waiting while this worker still holds the lock; WaitingError tells BullMQ it was moved on purpose.
      await job.moveToWait(token);
      throw new WaitingError();
    }
    // What a failed job keeps in Redis (where a forget does not reach) is the code and the storable message:
    // never what a model or embedding server answered, which can repeat the words it was sent. The log has the rest.
    if (RosterError.isInstance(error)) {
      if (error.storable !== error.message) deps.logger?.warn({ queue: name, job: job.id, code: error.code, err: error }, 'job failed at the far side');
      if (!error.retryable) throw new UnrecoverableError(`${error.code}: ${error.storable}`);
      throw new Error(`${error.code}: ${error.storable}`);
    }
    throw error;
  }
}

/** The nightly schedule; upserting a scheduler by id is idempotent, so any number of workers register it once. */
export async function registerSchedulers(queues: QueueSet, schedule: ScheduleOptions): Promise<void> {
  const nightly: Array<[JobName, number]> = [
    ['fade', 0],
    ['harvest', 5],
    ['review', 10],
    ['mirror', 20],
  ];
  for (const [name, minute] of nightly) {
    await queues.queues[name].upsertJobScheduler(`nightly-${name}`, { pattern: `${minute} ${schedule.hour} * * *`, tz: schedule.timezone }, { name, data: {} });
  }
  for (const name of ['extract', 'episodes'] as const) {
    await queues.queues[name].upsertJobScheduler(`idle-${name}`, { every: schedule.idleCheckMs }, { name, data: { idleMinutes: schedule.idleMinutes } });
  }
  await queues.queues.vacuum.upsertJobScheduler('every-vacuum', { every: schedule.vacuumEveryMs }, { name: 'vacuum', data: {} });
  // Turned off by unsetting ROSTER_BACKUP_DIR: a schedule left by an earlier run goes too.
  if (schedule.backup === true) await queues.queues.backup.upsertJobScheduler('nightly-backup', { pattern: `40 ${schedule.hour} * * *`, tz: schedule.timezone }, { name: 'backup', data: {} });
  else await queues.queues.backup.removeJobScheduler('nightly-backup');
}

/** Consume every queue, relay the outbox, keep the schedule. Stopping finishes short in-flight jobs and returns long ones to waiting. */
export async function startJobWorker(options: JobWorkerOptions): Promise<JobWorker> {
  const log = options.logger?.child({ component: 'worker' });
  const redis = redisState(log);
  const queues = createQueues(options.connection, options.prefix, redis.connectionError);
  const schedule: ScheduleOptions = {
    hour: options.schedule?.hour ?? 3,
    timezone: options.schedule?.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
    idleCheckMs: options.schedule?.idleCheckMs ?? 10 * 60_000,
    idleMinutes: options.schedule?.idleMinutes ?? 30,
    vacuumEveryMs: options.schedule?.vacuumEveryMs ?? 60 * 60_000,
    backup: options.backup !== undefined,
  };
  if (options.schedulers !== false) await registerSchedulers(queues, schedule);
  const shared = ownClient(options.connection);
  const workers = jobNames.map(
    (name) =>
      // Three parameters: BullMQ passes an abort signal only to a processor that takes one.
      new Worker(name, (job, token, signal) => processJob(options, job, token, signal), {
        connection: shared.connection,
        prefix: queues.prefix,
        concurrency: options.concurrency ?? 1,
        lockDuration: options.lockDurationMs ?? 30_000,
        stalledInterval: options.stalledIntervalMs ?? 30_000,
        maxStalledCount: 2,
      }, ClosingSafeConnection),
  );
  for (const worker of workers) {
    worker.on('failed', (job, error) => log?.warn({ queue: worker.name, job: job?.id, err: error }, 'job failed'));
    worker.on('error', (error) => redis.connectionError(error));
  }
  const relay =
    options.relay === false
      ? undefined
      : startRelayLoop(options.database, queues, { ...(options.relayIntervalMs === undefined ? {} : { intervalMs: options.relayIntervalMs }), ...(log === undefined ? {} : { logger: log }), onRedisError: redis.connectionError });
  // On Redis's return, the schedules are registered again if it came back without them (a restart with no persistence).
  const watch = redis.watch(options.connection, queues.prefix, async () => {
    if (options.schedulers === false) return;
    if ((await queues.queues.fade.getJobScheduler('nightly-fade')) !== undefined) return;
    await registerSchedulers(queues, schedule);
    log?.info('Redis came back without the schedules; registered them again');
  });
  log?.info({ queues: jobNames, prefix: queues.prefix, nightlyHour: schedule.hour, timezone: schedule.timezone }, 'worker ready');
  return {
    queues,
    async stop() {
      watch.stop();
      await relay?.stop();
      // Long jobs stop at their next progress report and wait for the next worker; short ones finish.
      for (const worker of workers) worker.cancelAllJobs('the worker is stopping');
      await Promise.all(workers.map((worker) => worker.close()));
      shared.close();
      await queues.close();
    },
  };
}

/** Enqueue a job now and, if asked, wait for its result (`roster jobs run`). */
export async function runJobNow(
  connection: ConnectionOptions,
  name: JobName,
  payload: Record<string, unknown>,
  options: { prefix?: string; wait?: boolean; timeoutMs?: number } = {},
): Promise<{ id: string; result?: unknown }> {
  const parsed = payloadSchemas[name].safeParse(payload);
  if (!parsed.success) throw new RosterError('job_payload_invalid', `Bad options for ${name}: ${parsed.error.message}`);
  const queues = createQueues(connection, options.prefix);
  const queue = queues.queues[name];
  const shared = ownClient(connection);
  let events: QueueEvents | undefined;
  try {
    if (options.wait === true) {
      // The wait reads the queue's events from the last one before the add: a job finished before the wait's first
      // read (a worker can take and finish one within milliseconds, before that read is sent) is not missed.
      const lastEventId = await lastEvent(shared.connection, queue.keys.events!);
      events = new QueueEvents(name, { connection: shared.connection, prefix: queues.prefix, lastEventId }, ClosingSafeConnection);
      // A connection dropped while waiting is retried by QueueEvents itself; the wait's own timeout bounds it.
      events.on('error', () => {});
      await events.waitUntilReady();
    }
    const job = await queue.add(name, parsed.data, { attempts: 1 });
    if (events === undefined) return { id: job.id! };
    const result = await job.waitUntilFinished(events, options.timeoutMs ?? 10 * 60_000);
    return { id: job.id!, result };
  } finally {
    await events?.close();
    shared.close();
    await queues.close();
  }
}

/** The id of the last entry of an events stream (`0-0` when it has none), read on the given client or on one made for it. */
async function lastEvent(connection: ConnectionOptions, key: string): Promise<string> {
  const reader = isClient(connection) || connection instanceof Cluster ? connection : new IORedis({ ...(connection as RedisOptions), lazyConnect: true });
  try {
    const [last] = await reader.xrevrange(key, '+', '-', 'COUNT', 1);
    return last?.[0] ?? '0-0';
  } finally {
    if (reader !== connection) reader.disconnect();
  }
}

/** How often the worker asks Redis whether it is there. */
const redisCheckMs = 2_000;

/**
 * Redis as this worker sees it, said once per change: one line when it goes
 * away and one when it is back, instead of one per reconnection attempt of
 * each of its connections. While it is away jobs wait and turns keep their
 * jobs in the outbox; on its return `onReturn` runs (the schedules).
 */
function redisState(log: Logger | undefined) {
  let reachable = true;
  const wentAway = (error: Error) => {
    if (!reachable) return;
    reachable = false;
    const code = (error as { code?: unknown }).code;
    log?.warn({ redis: 'unreachable', reason: typeof code === 'string' ? code : error.message }, 'Redis is unreachable: jobs wait, and turns keep their jobs in the outbox until it is back');
  };
  return {
    // What the connections report comes late and out of order (a connection still retrying after Redis is back):
    // only the watch's own ping decides the state; the connections' errors are noted at debug level.
    connectionError: (error: Error) => log?.debug({ err: { message: error.message } }, 'a Redis connection failed'),
    watch(connection: ConnectionOptions, prefix: string, onReturn: () => Promise<void>) {
      // A connection of its own that tries again every second, so that Redis's return is seen within moments of it.
      const client = watchClient(connection);
      // On a cluster, the master that matters is the one holding the queues' slot (the prefix is braced): a read of a key
      // in that slot goes to it, where a PING would go to any master. It comes back empty after a restart without a replica.
      const probe = client instanceof Cluster ? () => client.exists(`${prefix}:probe`) : () => client.ping();
      client.on('error', () => {});
      let stopped = false;
      let timer: NodeJS.Timeout | undefined;
      // Set on Redis's return until `onReturn` has run through: the queues' own connections reconnect later than this one
      // (up to 20 s), and until they have, it fails. That is tried again at the next check, not taken for Redis going away.
      let returning = false;
      const check = async () => {
        let answered = false;
        try {
          await probe();
          answered = true;
        } catch (error) {
          wentAway(error as Error);
        }
        if (answered && !reachable) {
          reachable = true;
          returning = true;
          log?.info({ redis: 'reachable' }, 'Redis is reachable again');
        }
        if (answered && returning) {
          try {
            await onReturn();
            returning = false;
          } catch (error) {
            log?.debug({ err: { message: (error as Error).message } }, 'the queues are not connected again yet; checking the schedules at the next ping');
          }
        }
        if (!stopped) timer = setTimeout(() => void check(), redisCheckMs);
      };
      timer = setTimeout(() => void check(), redisCheckMs);
      return {
        stop() {
          stopped = true;
          clearTimeout(timer);
          client.disconnect();
        },
      };
    },
  };
}

/** A client of the watch's own, which gives up on a command quickly and tries to connect again every second. */
function watchClient(connection: ConnectionOptions): IORedis | Cluster {
  if (isClusterConnection(connection)) {
    const { startupNodes, ...options } = connection;
    return new Cluster(startupNodes, { ...options, enableOfflineQueue: false, clusterRetryStrategy: () => 1000, redisOptions: { ...options.redisOptions, maxRetriesPerRequest: 1 } });
  }
  return isClient(connection)
    ? connection.duplicate({ enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => 1000 })
    : new IORedis({ ...(connection as RedisOptions), enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => 1000 });
}

function isClient(connection: ConnectionOptions): connection is IORedis {
  return typeof (connection as { duplicate?: unknown }).duplicate === 'function';
}
