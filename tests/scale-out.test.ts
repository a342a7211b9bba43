import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { until } from '@roster/channels/conformance';
import { openEmbeddedDatabase } from '@roster/db';
import { connectionFromUrl, createQueues, jobNames } from '@roster/jobs';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { runRoster, signInThrough, startListening, tempDataDir, type RunningRoster } from './support/roster-process.js';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function start(env: Record<string, string>): Promise<{ roster: RunningRoster; address: string }> {
  const started = await startListening(env);
  cleanups.push(async () => {
    if (started.roster.child.exitCode === null && started.roster.child.signalCode === null) await started.roster.stop();
  });
  return started;
}

describe('two of each process on one database and one Redis', () => {
  it('keeps a conversation’s turns in order across both servers, relays and runs every job once, and registers each schedule once', async () => {
    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const prefix = `test-${randomUUID()}`;
    const env = { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: prefix, REDIS_URL: redisUrl };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    // Each `roster start` is a server, a worker and a gateway: two of each.
    const one = await start(env);
    const two = await start(env);
    const redis = new Redis(redisUrl);
    cleanups.push(async () => {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    });

    // One person, signed in once: the session is in the shared database, so both servers take it.
    await one.roster.waitForOutput(/Made the first owner/);
    const { cookie, csrfToken } = await signInThrough(one.address, env);
    const say = async (address: string, message: string) => {
      const response = await fetch(`${address}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrfToken },
        body: JSON.stringify({ agent: 'Scout', message, id: randomUUID() }),
      });
      const body = await response.text();
      expect(response.status, body).toBe(200);
      expect(body).toContain('event: turn-end');
      return body;
    };

    // Eight messages to one conversation, four at a time, two through each server (a person streams at most two replies per server).
    const said = Array.from({ length: 8 }, (_, index) => `Note ${index + 1}: the ferry leaves from pier ${index + 1}.`);
    for (const round of [said.slice(0, 4), said.slice(4)]) await Promise.all(round.map((message, index) => say(index % 2 === 0 ? one.address : two.address, message)));
    const history = (await (await fetch(`${two.address}/api/chat/history`, { headers: { cookie } })).json()) as { messages: Array<{ role: string; text: string }> };
    const lines = history.messages.filter((line) => line.role !== 'system');
    // In order: each message, then its one reply, never another turn in between.
    expect(lines.map((line) => line.role)).toEqual(said.flatMap(() => ['person', 'agent']));
    expect(lines.filter((line) => line.role === 'person').map((line) => line.text).sort()).toEqual([...said].sort());

    // Every job the turns queued is relayed once, by one worker or the other, and run once.
    const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
    cleanups.push(() => database.close());
    const outbox = async () =>
      (await database.adminScope('test: read the outbox', (tx) => tx.query<{ id: string; queue: string; relayed: boolean }>(`select id, queue, relayed_at is not null as relayed from outbox where queue <> 'erase'`))).rows;
    await until(async () => (await outbox()).every((row) => row.relayed), 'every outbox row relayed', 60_000);
    const rows = await outbox();
    expect(rows.filter((row) => row.queue === 'extract').length).toBeGreaterThanOrEqual(8);
    const queues = createQueues(connectionFromUrl(redisUrl), prefix);
    cleanups.push(() => queues.close());
    await until(
      async () => {
        for (const row of rows) if ((await queues.queues[row.queue as 'extract'].getJobState(row.id)) !== 'completed') return false;
        return true;
      },
      'every relayed job completed',
      90_000,
    );
    for (const row of rows) {
      const job = (await queues.queues[row.queue as 'extract'].getJob(row.id))!;
      // One attempt, and no job of another id for the same row.
      expect(job.attemptsMade, `${row.queue} ${row.id}`).toBe(1);
    }
    let jobs = 0;
    for (const name of jobNames) jobs += (await queues.queues[name].getJobs(['completed', 'failed', 'active', 'waiting'])).filter((job) => !job.id!.startsWith('repeat:')).length;
    expect(jobs).toBe(rows.length);

    // Each schedule once, though both workers registered it.
    for (const [queue, id] of [
      ['fade', 'nightly-fade'],
      ['harvest', 'nightly-harvest'],
      ['review', 'nightly-review'],
      ['mirror', 'nightly-mirror'],
      ['extract', 'idle-extract'],
      ['episodes', 'idle-episodes'],
      ['vacuum', 'every-vacuum'],
    ] as const) {
      expect(await redis.zrange(`${prefix}:${queue}:repeat`, 0, -1), queue).toEqual([id]);
      expect((await queues.queues[queue].getDelayed()).filter((job) => job.repeatJobKey === id), queue).toHaveLength(1);
    }
  });
});
