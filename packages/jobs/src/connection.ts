import { RedisConnection } from 'bullmq';

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
