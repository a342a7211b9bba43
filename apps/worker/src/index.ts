import type { Config, Logger } from '@roster/config';
import type { Database } from '@roster/db';
import { pingRedis } from '@roster/redis';

export interface WorkerOptions {
  config: Pick<Config, 'REDIS_URL'>;
  database: Database;
  redisUrl: string;
  logger: Logger;
}

export interface RunningWorker {
  /** The queues this worker consumes. */
  queues: readonly string[];
  stop(): Promise<void>;
}

/**
 * The job worker. It checks that Redis answers and consumes the queues that
 * are registered; the learning loop's queues (fade, harvest, mirror, …)
 * register here when they land.
 */
export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const log = options.logger.child({ component: 'worker' });
  await pingRedis(options.redisUrl);
  const queues: string[] = [];
  log.info({ queues }, 'worker ready');
  return {
    queues,
    async stop() {
      log.info('worker stopped');
    },
  };
}
