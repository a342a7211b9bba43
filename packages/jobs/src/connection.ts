import { RedisConnection, type ConnectionOptions } from 'bullmq';
import { Cluster, type ClusterNode, type ClusterOptions } from 'ioredis';

/**
 * BullMQ's Redis connection, except that an error it reports after being
 * closed goes nowhere instead of crashing the process.
 *
 * A queue closed while its connection is still starting (the version check
 * that follows the handshake) makes BullMQ 5 disconnect the client and remove
 * every listener of the connection at once; the start-up then fails ("Stream
 * isn't writeable", or "Connection is closed") and BullMQ emits that failure
 * as an 'error' event that nobody can hear any more, which Node turns into an
 * uncaught exception. `roster jobs run` closes its queues within milliseconds
 * of opening them, so about one run in ten died that way with a raw stack.
 * While the connection is open its owner (a Queue, Worker or QueueEvents)
 * always listens for errors, so an error with no listener can only be one that
 * arrived after the close, when nothing is left to do with it.
 */
export class ClosingSafeConnection extends RedisConnection {
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'error' && this.listenerCount('error') === 0) return false;
    return super.emit(event, ...args);
  }
}

/**
 * The connection options of a Redis Cluster (a `redis+cluster://` REDIS_URL):
 * ioredis' cluster options and the nodes to start from. BullMQ makes a client
 * of its own only for a single Redis; a cluster client is made by
 * {@link ownClient} and handed to BullMQ, which duplicates it where it needs
 * a connection of its own (a worker's blocking one, QueueEvents').
 */
export type ClusterConnection = ClusterOptions & { startupNodes: ClusterNode[] };

export function isClusterConnection(connection: ConnectionOptions): connection is ClusterConnection {
  return Array.isArray((connection as { startupNodes?: unknown }).startupNodes);
}

/**
 * A client for BullMQ to share, and how to close it: for a cluster, a Cluster
 * client that BullMQ uses without closing it (a shared instance), closed here
 * once its queues and workers are; anything else as it is, for BullMQ to
 * open and close itself.
 */
export function ownClient(connection: ConnectionOptions): { connection: ConnectionOptions; close(): void } {
  if (!isClusterConnection(connection)) return { connection, close: () => {} };
  const { startupNodes, ...options } = connection;
  const cluster = new Cluster(startupNodes, { ...options, lazyConnect: true });
  return { connection: cluster, close: () => cluster.disconnect() };
}
