import { randomUUID } from 'node:crypto';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { openTestDatabase } from '@roster/db/testing';
import { runJobNow, startJobWorker } from '@roster/jobs';
import { createRuntime } from '@roster/runtime';
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { connection, redisUrl } from './support/learning-loop.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** The Redis Cluster hash slots the keys under a prefix fall in. */
async function slotsUnder(redis: Redis, prefix: string): Promise<Set<number>> {
  const keys = await redis.keys(`${prefix.replace(/[*?[\]\\]/g, '\\$&')}:*`);
  expect(keys.length).toBeGreaterThan(0);
  return new Set(keys.map((key) => calculateSlot(key)));
}

describe('the queues’ key prefix', () => {
  it('is braced by default, so that every queue key falls in one Redis Cluster slot, and jobs run under it', async () => {
    expect(parseConfig({}).ROSTER_QUEUE_PREFIX).toBe('{roster}');
    expect(parseConfig({ ROSTER_QUEUE_PREFIX: '{roster-b}' }).ROSTER_QUEUE_PREFIX).toBe('{roster-b}');
    expect(() => parseConfig({ ROSTER_QUEUE_PREFIX: '{half' })).toThrow(/ROSTER_QUEUE_PREFIX/);

    const test = await openTestDatabase();
    cleanups.push(() => test.cleanup());
    const roster = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
    const redis = new Redis(redisUrl);
    cleanups.push(async () => redis.quit());
    const run = async (prefix: string) => {
      const worker = await startJobWorker({
        database: test.database,
        memory: roster.memory,
        directory: roster.core.directory,
        engineFor: roster.engineFor,
        judgeFor: roster.judgeFor,
        connection,
        prefix,
        schedulers: false,
      });
      try {
        for (const name of ['fade', 'harvest'] as const) expect((await runJobNow(connection, name, {}, { prefix, wait: true, timeoutMs: 30_000 })).result).toBeDefined();
      } finally {
        await worker.stop();
        cleanups.push(async () => {
          const keys = await redis.keys(`${prefix.replace(/[*?[\]\\]/g, '\\$&')}:*`);
          if (keys.length > 0) await redis.del(...keys);
        });
      }
    };

    const braced = `{test-${randomUUID()}}`;
    await run(braced);
    expect((await slotsUnder(redis, braced)).size).toBe(1);
    // The control: without braces, the same queues spread over many slots (a cluster refuses BullMQ's multi-key scripts).
    const bare = `test-${randomUUID()}`;
    await run(bare);
    expect((await slotsUnder(redis, bare)).size).toBeGreaterThan(1);
  });
});
