import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { until } from '@roster/channels/testing';
import { openEmbeddedDatabase } from '@roster/db';
import { connectionFromUrl, createQueues, jobNames, type QueueSet } from '@roster/jobs';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisCluster, type RedisCluster } from './support/redis-cluster.js';
import { endRoster, runRoster, signInThrough, startListening, tempDataDir } from './support/roster-process.js';

let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster();
}, 90_000);
afterAll(async () => {
  await cluster?.stop();
});

describe('Roster on a three-master Redis Cluster', () => {
  it('chats, relays the outbox, runs jobs and schedules, shows the queues in Bull Board; /healthz says when a master is gone, and nothing is lost until it is back', async () => {
    const dir = tempDataDir();
    const prefix = `{test-${randomUUID()}}`;
    const env = { ROSTER_DATA_DIR: dir, REDIS_URL: cluster.url, ROSTER_QUEUE_PREFIX: prefix };
    let queues: QueueSet | undefined;
    let started: Awaited<ReturnType<typeof startListening>> | undefined;
    try {
      // A prefix without braces would spread a queue's keys over the cluster's slots: refused before anything starts.
      const unbraced = await runRoster(['jobs', 'run', 'fade'], { ...env, ROSTER_QUEUE_PREFIX: 'roster' });
      expect(unbraced.code).not.toBe(0);
      expect(unbraced.stderr).toMatch(/ROSTER_QUEUE_PREFIX.*braces/);

      expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
      started = await startListening(env);
      const { address, roster } = started;
      // The cluster is used as it is: no private redis-server in its place.
      expect(roster.output().stdout).not.toContain('private Redis');
      expect(fs.existsSync(path.join(dir, 'redis', 'redis.url'))).toBe(false);
      const health = await fetch(`${address}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ ok: true, redis: 'ok' });

      // A turn: its jobs go through the outbox, and the relay hands them to the cluster, where the worker runs them.
      await roster.waitForOutput(/Made the first owner/);
      const { cookie, csrfToken } = await signInThrough(address, env);
      const reply = await fetch(`${address}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrfToken },
        body: JSON.stringify({ agent: 'Scout', message: 'Remember that the ferry leaves from pier 9.', id: randomUUID() }),
      });
      const body = await reply.text();
      expect(reply.status, body).toBe(200);
      expect(body).toContain('event: turn-end');

      const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
      const outbox = async () =>
        (await database.adminScope('test: read the outbox', (tx) => tx.query<{ id: string; queue: string; relayed: boolean }>(`select id, queue, relayed_at is not null as relayed from outbox`))).rows;
      let relayed: Array<{ id: string; queue: string }> = [];
      try {
        await until(async () => {
          const rows = await outbox();
          relayed = rows;
          return rows.some((row) => row.queue === 'extract') && rows.every((row) => row.relayed);
        }, 'the turn’s outbox rows to be relayed', 60_000);
      } finally {
        await database.close();
      }
      expect(relayed.map((row) => row.queue)).toContain('extract');
      queues = createQueues(connectionFromUrl(cluster.url), prefix);
      await until(
        async () => {
          for (const row of relayed) if ((await queues!.queues[row.queue as 'extract'].getJobState(row.id)) !== 'completed') return false;
          return true;
        },
        'the relayed jobs to complete on the cluster',
        90_000,
      );

      // A job run by hand, waited for, completed by the worker.
      const run = await runRoster(['jobs', 'run', 'fade', '--wait', '--timeout', '60'], env, 90_000);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^fade done: \{/);

      // The schedules are on the cluster, each once.
      for (const [queue, id] of [['fade', 'nightly-fade'], ['extract', 'idle-extract'], ['vacuum', 'every-vacuum']] as const) {
        expect((await queues.queues[queue].getJobScheduler(id))?.key, queue).toBe(id);
      }
      // Every key of the installation's queues is in one slot, on one master.
      const home = await cluster.nodeFor(prefix);
      const reader = new Cluster([{ host: '127.0.0.1', port: cluster.nodes[0]!.port }], { lazyConnect: true });
      try {
        await reader.connect();
        expect(reader.nodes('master')).toHaveLength(3);
        const found = await Promise.all(reader.nodes('master').map(async (node) => ({ port: node.options.port, keys: await node.keys(`${prefix}:*`) })));
        expect(found.filter((node) => node.keys.length > 0).map((node) => node.port)).toEqual([home.port]);
      } finally {
        reader.disconnect();
      }

      // Bull Board reads every queue from the cluster, with the jobs just done.
      const board = await fetch(`${address}/admin/queues/api/queues`, { headers: { cookie } });
      expect(board.status).toBe(200);
      const shown = ((await board.json()) as { queues: Array<{ name: string; counts: Record<string, number> }> }).queues;
      expect(shown.map((queue) => queue.name).sort()).toEqual([...jobNames].sort());
      expect(shown.find((queue) => queue.name === 'fade')!.counts.completed).toBeGreaterThanOrEqual(1);
      expect(shown.find((queue) => queue.name === 'extract')!.counts.completed).toBeGreaterThanOrEqual(1);

      // The control: the master that holds the queues' slot is killed, and /healthz says Redis is not ok, naming it.
      await queues.close();
      queues = undefined;
      await cluster.kill(home);
      let last: { ok?: boolean; redis?: string } = {};
      await until(async () => {
        const response = await fetch(`${address}/healthz`);
        last = (await response.json()) as typeof last;
        return response.status === 503;
      }, '/healthz to report the lost master', 30_000);
      expect(last.ok).toBe(false);
      expect(last.redis).toContain(`127.0.0.1:${home.port}`);
      const doctor = await runRoster(['doctor', '--json'], env);
      expect(doctor.code).toBe(1);
      expect((JSON.parse(doctor.stdout) as { checks: Array<{ name: string; status: string; detail: string }> }).checks.find((check) => check.name === 'redis')).toMatchObject({
        status: 'fail',
        detail: expect.stringMatching(new RegExp(`127\\.0\\.0\\.1:${home.port}.*roster start does not replace a cluster`)),
      });
      // Turns go on meanwhile; their jobs wait in the outbox, which the relay tries and cannot hand over.
      const during = await fetch(`${address}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrfToken },
        body: JSON.stringify({ agent: 'Scout', message: 'Remember that the bus leaves from stop 4.', id: randomUUID() }),
      });
      expect(during.status, await during.text()).toBe(200);
      const reopened = await openEmbeddedDatabase(path.join(dir, 'pglite'));
      const waiting = async () =>
        (
          await reopened.adminScope('test: read the waiting rows', (tx) =>
            tx.query<{ id: string; queue: string; relayed: boolean; tried: boolean }>(
              `select id, queue, relayed_at is not null as relayed, last_error is not null as tried from outbox where id <> all($1)`,
              [relayed.map((row) => row.id)],
            ),
          )
        ).rows;
      let later: Awaited<ReturnType<typeof waiting>> = [];
      try {
        await until(async () => {
          later = await waiting();
          return later.some((row) => row.tried);
        }, 'the relay to try the new rows and fail', 60_000);
        expect(later.length).toBeGreaterThan(0);
        expect(later.filter((row) => row.relayed)).toEqual([]);

        // The master comes back, empty: /healthz is ok again, and every waiting row is handed over and run.
        await cluster.restart(home);
        await until(async () => (await fetch(`${address}/healthz`)).status === 200, '/healthz to be ok again', 60_000);
        await until(async () => {
          later = await waiting();
          return later.every((row) => row.relayed);
        }, 'the waiting rows to be relayed', 90_000);
      } finally {
        await reopened.close();
      }
      queues = createQueues(connectionFromUrl(cluster.url), prefix);
      await until(
        async () => {
          for (const row of later) if ((await queues!.queues[row.queue as 'extract'].getJobState(row.id)) !== 'completed') return false;
          return true;
        },
        'the jobs of the turn made while the master was away to complete',
        90_000,
      );
      // The master came back without the schedules it held: the worker registers them again.
      await until(async () => (await queues!.queues.fade.getJobScheduler('nightly-fade')) !== undefined, 'the schedules to be registered again', 60_000);
      expect(await roster.stop()).toBe(0);
    } finally {
      await queues?.close();
      if (started !== undefined) await endRoster(started.roster);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
