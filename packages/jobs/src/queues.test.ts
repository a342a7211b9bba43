import { randomUUID } from 'node:crypto';
import { RedisConnection } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { ClosingSafeConnection } from './connection.js';
import { connectionFromUrl, createQueues } from './queues.js';
import { runJobNow } from './worker.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Every uncaught exception while `body` runs and its connections settle. */
async function uncaughtDuring(body: () => Promise<void>): Promise<Error[]> {
  const caught: Error[] = [];
  const listener = (error: Error) => void caught.push(error);
  // vitest's own listener would fail the run; this test wants to see the exceptions itself.
  const others = process.listeners('uncaughtException');
  process.removeAllListeners('uncaughtException');
  process.on('uncaughtException', listener);
  try {
    await body();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('uncaughtException', listener);
    for (const other of others) process.on('uncaughtException', other);
  }
  return caught;
}

describe('queues closed while their connections start', () => {
  it('a start-up failure reported after the close goes nowhere; on BullMQ’s own connection it throws (the control)', async () => {
    const options = { ...connectionFromUrl(redisUrl), enableOfflineQueue: false };
    // What BullMQ does when a queue is closed during its connection's version check: the close removes every
    // listener, then the check fails and the failure is emitted as 'error'.
    const ours = new ClosingSafeConnection(options, { blocking: false });
    await ours.close();
    expect(ours.emit('error', new Error("Stream isn't writeable and enableOfflineQueue options is false"))).toBe(false);

    const plain = new RedisConnection(options, { blocking: false });
    await plain.close();
    expect(() => plain.emit('error', new Error("Stream isn't writeable and enableOfflineQueue options is false"))).toThrow(/Stream isn't writeable/);
  });

  it('queue sets and a job wait opened and closed at once, forty times, throw nothing', async () => {
    const caught = await uncaughtDuring(async () => {
      for (let round = 0; round < 40; round += 1) {
        const prefix = `test-${randomUUID()}`;
        const queues = createQueues(connectionFromUrl(redisUrl), prefix);
        await queues.close();
      }
      const prefix = `test-${randomUUID()}`;
      await expect(runJobNow(connectionFromUrl(redisUrl), 'fade', {}, { prefix, wait: true, timeoutMs: 50 })).rejects.toThrow(/timed out/i);
      const queues = createQueues(connectionFromUrl(redisUrl), prefix);
      await Promise.all(Object.values(queues.queues).map((queue) => queue.obliterate({ force: true })));
      await queues.close();
    });
    expect(caught).toEqual([]);
  });
});
