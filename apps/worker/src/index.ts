import type { Config, InstallationKey, Logger } from '@roster/config';
import type { Database } from '@roster/db';
import { connectionFromUrl, jobNames, startJobWorker, type JobWorker } from '@roster/jobs';
import { pingRedis } from '@roster/redis';
import { takeNightlyBackup, type Runtime } from '@roster/runtime';

export interface WorkerOptions {
  config: Pick<
    Config,
    | 'ROSTER_NIGHTLY_HOUR'
    | 'ROSTER_TIMEZONE'
    | 'ROSTER_IDLE_MINUTES'
    | 'ROSTER_VACUUM_MINUTES'
    | 'ROSTER_QUEUE_PREFIX'
    | 'ROSTER_JOB_LOCK_SECONDS'
    | 'ROSTER_BACKUP_DIR'
    | 'ROSTER_BACKUP_KEEP'
    | 'DATABASE_URL'
    | 'ROSTER_DATA_DIR'
  >;
  database: Database;
  /** The installation key: the nightly backup is sealed with it. */
  key: InstallationKey;
  runtime: Runtime;
  redisUrl: string;
  logger: Logger;
}

export interface RunningWorker {
  /** The queues this worker consumes. */
  queues: readonly string[];
  jobs: JobWorker;
  stop(): Promise<void>;
}

/**
 * The job worker: consumes every queue of the learning loop, relays the
 * outbox to them, and keeps the nightly schedule. More than one may run.
 */
export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  await pingRedis(options.redisUrl);
  const { config } = options;
  const backupDir = config.ROSTER_BACKUP_DIR;
  const backup =
    backupDir === undefined
      ? undefined
      : async () => {
          const taken = await takeNightlyBackup({ config, database: options.database, key: options.key, dir: backupDir, keep: config.ROSTER_BACKUP_KEEP });
          options.logger.info({ file: taken.file, bytes: taken.header.bytes, tookMs: taken.header.tookMs, removed: taken.removed.length }, 'nightly backup taken');
          return { file: taken.file, bytes: taken.header.bytes, tookMs: taken.header.tookMs, removed: taken.removed.length };
        };
  const jobs = await startJobWorker({
    database: options.database,
    memory: options.runtime.memory,
    directory: options.runtime.core.directory,
    engineFor: options.runtime.engineFor,
    judgeFor: options.runtime.judgeFor,
    logger: options.logger,
    ...(backup === undefined ? {} : { backup }),
    connection: connectionFromUrl(options.redisUrl),
    prefix: options.config.ROSTER_QUEUE_PREFIX,
    // A dead worker's job is found by another worker's stalled check: its lock must have run out, and the check must run.
    lockDurationMs: options.config.ROSTER_JOB_LOCK_SECONDS * 1000,
    stalledIntervalMs: options.config.ROSTER_JOB_LOCK_SECONDS * 1000,
    schedule: {
      hour: options.config.ROSTER_NIGHTLY_HOUR,
      idleMinutes: options.config.ROSTER_IDLE_MINUTES,
      vacuumEveryMs: options.config.ROSTER_VACUUM_MINUTES * 60_000,
      ...(options.config.ROSTER_TIMEZONE === undefined ? {} : { timezone: options.config.ROSTER_TIMEZONE }),
    },
  });
  return { queues: jobNames, jobs, stop: () => jobs.stop() };
}
