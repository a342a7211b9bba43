import { Queue, type ConnectionOptions, type JobsOptions, type RedisOptions } from 'bullmq';
import { jobNames, type JobName } from '@roster/contracts';
import { parseRedisUrl } from '@roster/config';
import { ClosingSafeConnection, isClusterConnection, ownClient, type ClusterConnection } from './connection.js';

export { isJobName, jobNames, payloadSchemas, type JobName, type JobPayload } from '@roster/contracts';

/** Retries with backoff; completed jobs are kept a while so that a re-add with the same id is a no-op; no stack is kept. */
export const defaultJobOptions: JobsOptions = {
  attempts: 4,
  backoff: { type: 'exponential', delay: 2000 },
  removeOnComplete: { age: 7 * 24 * 3600, count: 10_000 },
  removeOnFail: { age: 30 * 24 * 3600 },
  // A failed job keeps its reason (a code and a message Roster wrote), not a stack: the worker's log has that.
  stackTraceLimit: 0,
};

export interface QueueSet {
  prefix: string;
  queues: Record<JobName, Queue>;
  close(): Promise<void>;
}

/**
 * The connection options of a producer (a Queue that adds jobs). With
 * ioredis' offline queue on, an `add` while Redis is away waits for it to
 * come back, for ever; BullMQ's advice for producers is to turn it off, so
 * that the call fails at once and the caller decides (the outbox keeps the
 * job). `maxRetriesPerRequest` stays null: a finite limit would also fail a
 * command in flight when the connection drops, and if that command is the
 * queue's own start-up check, BullMQ keeps that failure and the queue never
 * works again, even after Redis returns. Callers bound their own wait
 * instead (the relay does). A ready-made client is used as it is.
 */
function producerConnection(connection: ConnectionOptions): ConnectionOptions {
  // BullMQ's own test for a client instance rather than options.
  if (['connect', 'disconnect', 'duplicate'].every((method) => typeof (connection as unknown as Record<string, unknown>)[method] === 'function')) return connection;
  // A cluster client keeps its offline queue at the top: its nodes' own connections are made on their first command, which they must hold until then.
  if (isClusterConnection(connection)) return { ...connection, enableOfflineQueue: false };
  const options: RedisOptions = { ...(connection as RedisOptions), enableOfflineQueue: false };
  return options;
}

/**
 * BullMQ queues of every job, under one key prefix (tests use a prefix of their own). Producers: they fail fast while Redis is away.
 * A connection error goes to `onError` (the worker says once that Redis is away); without it, the caller learns of
 * Redis from the calls that fail, and nothing is printed per reconnection attempt.
 */
export function createQueues(connection: ConnectionOptions, prefix = '{roster}', onError: (error: Error) => void = () => {}): QueueSet {
  const producer = ownClient(producerConnection(connection));
  const queues = Object.fromEntries(
    jobNames.map((name) => {
      const queue = new Queue(name, { connection: producer.connection, prefix, defaultJobOptions }, ClosingSafeConnection);
      queue.on('error', onError);
      return [name, queue];
    }),
  ) as Record<JobName, Queue>;
  return {
    prefix,
    queues,
    async close() {
      await Promise.all(Object.values(queues).map((queue) => queue.close()));
      producer.close();
    },
  };
}

/** Redis connection options for BullMQ from a REDIS_URL: one server's, or a cluster's ({@link ClusterConnection}). */
export function connectionFromUrl(url: string): ConnectionOptions {
  const target = parseRedisUrl(url);
  const credentials = {
    ...(target.password === undefined ? {} : { password: target.password }),
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.tls ? { tls: {} } : {}),
  };
  if (target.kind === 'cluster') {
    const cluster: ClusterConnection = {
      startupNodes: target.nodes,
      // BullMQ workers block on Redis; they must not give up on a slow command.
      redisOptions: { ...credentials, maxRetriesPerRequest: null },
    };
    return cluster;
  }
  return {
    host: target.host,
    port: target.port,
    ...credentials,
    ...(target.db === undefined ? {} : { db: target.db }),
    // BullMQ workers block on Redis; they must not give up on a slow command.
    maxRetriesPerRequest: null,
  };
}
