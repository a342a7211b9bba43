import type { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/** The part of pglite-socket's query queue this relies on: every connection's messages go through `enqueue`, one at a time. */
interface QueryQueue {
  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number>;
}

/** Parse, Bind, Describe, Execute and Close: the messages of an extended-protocol request, which Sync (or Flush) ends. */
const partsOfARequest = new Set(['P', 'B', 'D', 'E', 'C'].map((letter) => letter.charCodeAt(0)));

/**
 * Make the host run each connection's extended-protocol request whole.
 *
 * pglite-socket queues every message on its own and keeps one connection's
 * turn only while a transaction is open. A statement outside a transaction
 * is several messages (Parse, Bind, Describe, Execute, Sync), so another
 * connection's statement could run between its Parse and its Bind: the
 * unnamed statement was then the other one's, and the Bind failed with
 * "unnamed prepared statement does not exist", or bound the other
 * statement. Here a connection's parts are held until its Sync (or Flush,
 * or any other message) and handed to the queue as one: PGlite runs them in
 * one go, as a server runs one connection's messages in its own session.
 */
export function keepRequestsWhole(server: PGLiteSocketServer): void {
  const queue = (server as unknown as { queryQueue?: QueryQueue }).queryQueue;
  if (queue === undefined || typeof queue.enqueue !== 'function') {
    throw new Error('this pglite-socket has no query queue to keep requests whole: the host cannot share the database safely');
  }
  const enqueue = queue.enqueue.bind(queue);
  const held = new Map<number, Uint8Array[]>();
  queue.enqueue = (handlerId, message, onData) => {
    const parts = held.get(handlerId) ?? [];
    if (partsOfARequest.has(message[0]!)) {
      parts.push(message);
      held.set(handlerId, parts);
      // Nothing is answered before the request's end; its answers come with the last message's.
      return Promise.resolve(0);
    }
    held.delete(handlerId);
    return enqueue(handlerId, parts.length === 0 ? message : Buffer.concat([...parts, message]), onData);
  };
}
