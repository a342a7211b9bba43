import { randomUUID } from 'node:crypto';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { openTestDatabase } from '@roster/db/testing';
import { runJobNow, startJobWorker } from '@roster/jobs';
import { createRuntime } from '@roster/runtime';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { connection, redisUrl } from './support/learning-loop.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('the vacuum job', () => {
  it('reclaims the dead rows updates leave on the embedded database, which runs no autovacuum, lets its old write-ahead log go, and is scheduled', async () => {
    const test = await openTestDatabase();
    cleanups.push(() => test.cleanup());
    const database = test.database;
    const roster = await createRuntime({ config: parseConfig({}), database, key: testInstallationKey });
    const prefix = `test-${randomUUID()}`;
    const worker = await startJobWorker({
      database,
      memory: roster.memory,
      directory: roster.core.directory,
      engineFor: roster.engineFor,
      judgeFor: roster.judgeFor,
      connection,
      prefix,
      schedule: { vacuumEveryMs: 60 * 60_000 },
    });
    const redis = new Redis(redisUrl);
    cleanups.push(async () => {
      await worker.stop();
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    });
    expect(await worker.queues.queues.vacuum.getJobScheduler('every-vacuum')).toMatchObject({ every: 60 * 60_000 });

    const agent = await roster.core.directory.addAgent({ name: 'Scout', job: 'finds and checks sources' });
    for (let round = 0; round < 50; round += 1) {
      await database.adminScope('test: rewrite an agent', (tx) => tx.query('update agents set job = $2 where id = $1', [agent.id, `finds and checks sources, round ${round}`]));
    }
    const dead = async () => {
      // Statistics reach the shared view when a session reports them; this session reports now.
      await database.ownerSession('test: report statistics', (session) => session.query('select pg_stat_force_next_flush()'));
      const { rows } = await database.ownerSession('test: dead rows', (session) => session.query<{ n: string }>(`select n_dead_tup::text as n from pg_stat_user_tables where relname = 'agents'`));
      return Number(rows[0]!.n);
    };
    // The positive control: the updates left dead rows, and nothing took them away.
    expect(await dead()).toBeGreaterThanOrEqual(50);

    // Write-ahead log past one segment: the segments before the current one are there until a checkpoint.
    const wal = async () =>
      database.ownerSession('test: the write-ahead log', async (session) => {
        const current = (await session.query<{ name: string }>('select pg_walfile_name(pg_current_wal_lsn()) as name')).rows[0]!.name;
        const files = (await session.query<{ name: string }>(`select name from pg_ls_waldir() where name ~ '^[0-9A-F]{24}$' order by name`)).rows.map((row) => row.name);
        return { current, older: files.filter((name) => name < current) };
      });
    await database.ownerSession('test: fill more than a segment of log', (session) => session.query(`create table wal_filler as select g, md5(g::text) || md5((g * 7)::text) as body from generate_series(1, 250000) g`));
    const before = await wal();
    expect(before.older.length).toBeGreaterThan(0);

    const { result } = await runJobNow(connection, 'vacuum', {}, { prefix, wait: true, timeoutMs: 60_000 });
    expect(result).toMatchObject({ database: 'embedded', checkpoint: true });
    // The checkpoint let the segments before it go (recycled under later names, or removed).
    expect((await wal()).older.filter((name) => before.older.includes(name))).toEqual([]);
    expect((result as { tables: number }).tables).toBeGreaterThan(20);
    expect(await dead()).toBe(0);
    // What the rows said is untouched.
    expect((await roster.core.directory.agentByName('Scout')).job).toBe('finds and checks sources, round 49');
  });
});
