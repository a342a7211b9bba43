import { randomUUID } from 'node:crypto';
import { createLogger } from '@roster/config';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { connectionFromUrl, createQueues, registerSchedulers, type QueueSet } from '@roster/jobs';
import { createServer } from '@roster/server';
import { afterEach, describe, expect, it } from 'vitest';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function queues(prefix = `test-${randomUUID()}`): Promise<QueueSet> {
  const set = createQueues(connectionFromUrl(redisUrl), prefix);
  cleanups.push(async () => {
    await Promise.all(Object.values(set.queues).map((queue) => queue.obliterate({ force: true })));
    await set.close();
  });
  return set;
}

describe('Bull Board', () => {
  it('shows every queue on loopback and refuses other addresses until the owner login exists', async () => {
    const test: TestDatabase = await openTestDatabase();
    cleanups.push(() => test.cleanup());
    const set = await queues();
    await set.queues.fade.add('fade', {});
    const app = await createServer({
      config: { HOST: '127.0.0.1', PORT: 0, NODE_ENV: 'test' },
      database: test.database,
      redisUrl,
      logger: createLogger({ LOG_LEVEL: 'silent' }),
      queues: Object.values(set.queues),
    });
    cleanups.push(() => app.close());

    const local = await app.inject({ method: 'GET', url: '/admin/queues/api/queues', remoteAddress: '127.0.0.1' });
    expect(local.statusCode).toBe(200);
    const body = local.json() as { queues: Array<{ name: string; counts: Record<string, number> }> };
    expect(body.queues.map((queue) => queue.name).sort()).toEqual(['embed', 'episodes', 'erase', 'extract', 'fade', 'harvest', 'mirror', 'review']);
    expect(body.queues.find((queue) => queue.name === 'fade')?.counts.waiting).toBe(1);
    const page = await app.inject({ method: 'GET', url: '/admin/queues', remoteAddress: '::1' });
    expect(page.statusCode).toBe(200);

    const remote = await app.inject({ method: 'GET', url: '/admin/queues/api/queues', remoteAddress: '192.0.2.10' });
    expect(remote.statusCode).toBe(403);
    expect(remote.json()).toEqual({ error: { code: 'forbidden', message: 'Bull Board answers only on loopback until the owner login is set up.' } });
  });
});

describe('schedules', () => {
  it('registers the nightly and idle schedules once, however many workers start', async () => {
    const prefix = `test-${randomUUID()}`;
    const first = await queues(prefix);
    const second = createQueues(connectionFromUrl(redisUrl), prefix);
    cleanups.push(() => second.close());
    const schedule = { hour: 4, timezone: 'Europe/Rome', idleCheckMs: 600_000, idleMinutes: 30 };
    await Promise.all([registerSchedulers(first, schedule), registerSchedulers(second, schedule), registerSchedulers(first, schedule)]);

    const schedulers = (await Promise.all(Object.values(first.queues).map((queue) => queue.getJobSchedulers()))).flat();
    expect(schedulers.map((scheduler) => scheduler.key).sort()).toEqual([
      'idle-episodes',
      'idle-extract',
      'nightly-fade',
      'nightly-harvest',
      'nightly-mirror',
      'nightly-review',
    ]);
    const mirror = schedulers.find((scheduler) => scheduler.key === 'nightly-mirror');
    expect(mirror).toMatchObject({ pattern: '20 4 * * *', tz: 'Europe/Rome' });
  });
});
