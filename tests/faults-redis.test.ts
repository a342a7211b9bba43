import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { until } from '@roster/channels/testing';
import { openEmbeddedDatabase } from '@roster/db';
import { connectionFromUrl, createQueues, jobNames } from '@roster/jobs';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, isRunning, runRoster, signInThrough, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A Redis of the test's own on `port`, without persistence: started again, it is empty, as after a restart that lost its data. */
async function startRedis(port: number): Promise<ChildProcess> {
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => server.once('exit', resolve));
  cleanups.push(async () => {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
    await exited;
  });
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => 100, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  try {
    await until(async () => (await client.ping().catch(() => null)) === 'PONG', `redis-server on ${port}`, 10_000);
  } finally {
    client.disconnect();
  }
  return server;
}

async function killRedis(server: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill('SIGKILL');
  await exited;
}

/** The keys of the nightly schedulers under `prefix` (not of the jobs they made), a few times a second at most. */
async function schedules(port: number, prefix: string): Promise<string[]> {
  await new Promise((resolve) => setTimeout(resolve, 200));
  const client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
  try {
    return (await client.keys(`${prefix}:*:repeat:nightly-*`)).filter((key) => /:repeat:nightly-[a-z]+$/.test(key)).sort();
  } finally {
    client.disconnect();
  }
}

/** The JSON log lines of stderr after the first `from` lines, and the lines that are not JSON. */
type LogLine = { msg: string; redis?: string; level: number };

function logSince(roster: RunningRoster, from: number): { json: LogLine[]; other: string[] } {
  const lines = roster.output().stderr.split('\n').slice(from).filter((line) => line.trim() !== '');
  const json: LogLine[] = [];
  const other: string[] = [];
  for (const line of lines) {
    try {
      json.push(JSON.parse(line) as LogLine);
    } catch {
      other.push(line);
    }
  }
  return { json, other };
}

const lineCount = (roster: RunningRoster) => roster.output().stderr.split('\n').length - 1;

/** Exit code of a process that was asked to stop, or 'still running' once `ms` have passed. */
function exitWithin(roster: RunningRoster, ms: number): Promise<number | null | 'still running'> {
  return Promise.race([roster.stop(), new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), ms))]);
}

async function startOn(redisPort: number, prefix: string, dir = tempDataDir()): Promise<RunningRoster> {
  const roster = startRoster(['start'], { ROSTER_DATA_DIR: dir, PORT: String(await freePort()), REDIS_URL: `redis://127.0.0.1:${redisPort}`, ROSTER_QUEUE_PREFIX: prefix, LOG_LEVEL: 'info' });
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  cleanups.push(async () => {
    if (roster.child.exitCode === null && roster.child.signalCode === null) roster.child.kill('SIGKILL');
  });
  await roster.waitForOutput(/Roster is running at/);
  return roster;
}

describe('Redis goes away under roster start', () => {
  it('says so in one line and its return in another, registers the schedules an empty Redis lost, and still stops within 10 s while it is away', async () => {
    const port = await freePort();
    const prefix = 'faults';
    let redis = await startRedis(port);
    const roster = await startOn(port, prefix);
    // The positive control: the schedules are there while Redis is.
    await until(async () => (await schedules(port, prefix)).length === 4, 'the nightly schedules', 20_000);
    expect(await schedules(port, prefix)).toEqual([`${prefix}:fade:repeat:nightly-fade`, `${prefix}:harvest:repeat:nightly-harvest`, `${prefix}:mirror:repeat:nightly-mirror`, `${prefix}:review:repeat:nightly-review`]);

    const before = lineCount(roster);
    await killRedis(redis);
    await until(() => logSince(roster, before).json.some((line) => line.redis === 'unreachable'), 'the line that Redis is unreachable', 20_000);
    // Every connection keeps retrying for a while: still one line, and no stack printed per retry.
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    const away = logSince(roster, before);
    expect(away.json.map((line) => line.msg)).toEqual(['Redis is unreachable: jobs wait, and turns keep their jobs in the outbox until it is back']);
    expect(away.other).toEqual([]);

    // Back, and empty: the return is said once, and the schedules are made again.
    const back = lineCount(roster);
    redis = await startRedis(port);
    expect(await schedules(port, prefix)).toEqual([]);
    await until(async () => (await schedules(port, prefix)).length === 4, 'the schedules registered again', 30_000);
    await until(() => logSince(roster, back).json.some((line) => line.redis === 'reachable'), 'the line that Redis is back', 10_000);
    // The worker says so once every schedule is registered, a moment after the first ones are in Redis.
    await until(() => logSince(roster, back).json.some((line) => line.msg === 'Redis came back without the schedules; registered them again'), 'the line that the schedules are back', 10_000);
    expect(logSince(roster, back).json.map((line) => line.msg)).toEqual(['Redis is reachable again', 'Redis came back without the schedules; registered them again']);

    // Away again, then asked to stop: it ends within 10 s, having said why it did not wait longer.
    await killRedis(redis);
    await until(() => logSince(roster, back).json.some((line) => line.redis === 'unreachable'), 'the line that Redis is unreachable again', 20_000);
    expect(await exitWithin(roster, 10_000)).not.toBe('still running');
  });

  it('ends at once on a second signal while the first is still stopping', async () => {
    const port = await freePort();
    const redis = await startRedis(port);
    const roster = await startOn(port, 'faults-twice');
    await killRedis(redis);
    await until(() => logSince(roster, 0).json.some((line) => line.redis === 'unreachable'), 'the line that Redis is unreachable', 20_000);
    roster.child.kill('SIGTERM');
    await until(() => logSince(roster, 0).json.some((line) => line.msg === 'stopping'), 'the stopping line', 5_000);
    // The second signal.
    const exited = roster.stop();
    // 128 + 15: only the second signal's way out ends with this code.
    expect(await exited).toBe(143);
    expect(roster.output().stderr).toContain('Stopping at once (SIGTERM again).');
  });
});

/** Every schedule the worker keeps (apps/worker): the nightly jobs, the idle checks and the vacuum. */
const everySchedule = ['every-vacuum', 'idle-episodes', 'idle-extract', 'nightly-fade', 'nightly-harvest', 'nightly-mirror', 'nightly-review'];

describe('Redis away for a minute under load', () => {
  it('answers every turn, keeps their jobs in the outbox and relays each once to the Redis that came back empty, registers every schedule again, and logs each change once', async () => {
    const port = await freePort();
    const prefix = `test-${randomUUID()}`;
    let redis = await startRedis(port);
    const dir = tempDataDir();
    const env = { ROSTER_DATA_DIR: dir };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    const roster = await startOn(port, prefix, dir);
    const address = roster.output().stdout.match(/running at (http:\/\/\S+)/)![1]!;
    const session = await signInThrough(address, env);
    // This test reads the outbox beside roster start, as a client of the same embedded database.
    const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
    cleanups.push(() => database.close());
    const outbox = () =>
      database.adminScope('test: read the outbox', async (tx) => (await tx.query<{ id: string; relayed: boolean }>('select id, relayed_at is not null as relayed from outbox order by id')).rows);
    // BullMQ's own view of the queues, from a connection made while Redis is there (it fails fast when Redis is not).
    const queuesNow = async () => {
      const set = createQueues(connectionFromUrl(`redis://127.0.0.1:${port}`), prefix);
      await Promise.all(jobNames.map((name) => set.queues[name].waitUntilReady()));
      return set;
    };
    let queues = await queuesNow();
    const first = queues;
    cleanups.push(() => first.close().catch(() => {}));
    const schedulers = async () => (await Promise.all(jobNames.map((name) => queues.queues[name].getJobSchedulers()))).flat().map((scheduler) => scheduler.key).sort();

    let n = 0;
    const turn = async () => {
      n += 1;
      const response = await fetch(`${address}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie: session.cookie, 'x-csrf-token': session.csrfToken },
        body: JSON.stringify({ agent: 'Scout', message: `remember that locker ${n} holds parcel ${n * 7}`, id: randomUUID() }),
      });
      return { n, body: await response.text() };
    };
    const answered = (result: { n: number; body: string }) => result.body.includes(`Noted: locker ${result.n} holds parcel ${result.n * 7}`) && result.body.includes('event: done');

    // The positive controls: with Redis there, a turn's jobs are relayed, and every schedule is registered.
    expect(answered(await turn())).toBe(true);
    await until(async () => (await outbox()).length > 0 && (await outbox()).every((row) => row.relayed), 'the first turn’s jobs relayed', 30_000);
    await until(async () => (await schedulers()).length === everySchedule.length, 'the schedules', 30_000);
    expect(await schedulers()).toEqual(everySchedule);
    const before = new Set((await outbox()).map((row) => row.id));

    // Redis goes away for a minute, while turns go on one after another.
    const linesBefore = lineCount(roster);
    await queues.close();
    await killRedis(redis);
    const results: Array<{ n: number; body: string }> = [];
    const awayUntil = Date.now() + 60_000;
    while (Date.now() < awayUntil) results.push(await turn());
    expect(results.length).toBeGreaterThan(0);
    expect(results.filter((result) => !answered(result))).toEqual([]);
    const pending = (await outbox()).filter((row) => !before.has(row.id));
    // Every turn's extract job (and the harvest of its "remember") waits in the outbox, none relayed.
    expect(pending.length).toBeGreaterThanOrEqual(results.length);
    expect(pending.filter((row) => row.relayed)).toEqual([]);
    const away = logSince(roster, linesBefore);
    expect(away.other).toEqual([]);
    expect(away.json.filter((line) => line.redis !== undefined || /redis/i.test(line.msg))).toEqual([
      expect.objectContaining({ redis: 'unreachable', msg: 'Redis is unreachable: jobs wait, and turns keep their jobs in the outbox until it is back' }),
    ]);
    // Nothing else above info: no line per retry of any connection.
    expect(away.json.filter((line) => line.level >= 40)).toHaveLength(1);

    // Back, and empty: each row becomes one job, which the worker completes (and so do the rows those jobs write); the schedules are there again, once each.
    const linesBack = lineCount(roster);
    redis = await startRedis(port);
    queues = await queuesNow();
    cleanups.push(() => queues.close());
    const jobs = async () =>
      (await Promise.all(jobNames.map((name) => queues.queues[name].getJobs(['completed', 'failed', 'waiting', 'active', 'delayed', 'prioritized', 'waiting-children']))))
        .flat()
        .filter((job) => !job.id!.startsWith('repeat:'));
    const settled = async () => {
      const rows = (await outbox()).filter((row) => !before.has(row.id));
      const found = await jobs();
      const states = await Promise.all(found.map((job) => job.getState()));
      return rows.every((row) => row.relayed) && states.every((state) => state === 'completed') && found.length === rows.length ? { rows, found } : undefined;
    };
    await until(async () => (await settled()) !== undefined, 'every row relayed and its job completed', 240_000);
    const { rows, found } = (await settled())!;
    expect(rows.map((row) => row.id)).toEqual(expect.arrayContaining(pending.map((row) => row.id)));
    // Exactly once: one job per row, its id the row's, none without a row.
    expect(found.map((job) => job.id!).sort()).toEqual(rows.map((row) => row.id).sort());
    await until(async () => (await schedulers()).length === everySchedule.length, 'the schedules registered again', 30_000);
    expect(await schedulers()).toEqual(everySchedule);
    const back = logSince(roster, linesBack);
    expect(back.other).toEqual([]);
    expect(back.json.filter((line) => line.redis !== undefined || /redis/i.test(line.msg)).map((line) => line.msg)).toEqual(['Redis is reachable again', 'Redis came back without the schedules; registered them again']);
    expect(await roster.stop()).toBe(0);
  }, 360_000);
});

describe('a private Redis after roster start is killed', () => {
  it('is found by its pid file and stopped by the next start, which runs its own', async () => {
    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const env = { ROSTER_DATA_DIR: dir, REDIS_URL: `redis://127.0.0.1:${await freePort()}` };
    const pidFile = path.join(dir, 'redis', 'redis.pid');
    const first = startRoster(['start'], { ...env, PORT: String(await freePort()) });
    await first.waitForOutput(/running at .*private Redis/);
    const orphan = Number(fs.readFileSync(pidFile, 'utf8'));
    cleanups.push(() => isRunning(orphan) && process.kill(orphan, 'SIGKILL'));
    const killed = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await killed;
    // The positive control: a kill -9 leaves the redis-server running.
    expect(isRunning(orphan)).toBe(true);

    const second = startRoster(['start'], { ...env, PORT: String(await freePort()) });
    cleanups.push(async () => {
      if (second.child.exitCode === null && second.child.signalCode === null) second.child.kill('SIGKILL');
    });
    await second.waitForOutput(/running at .*private Redis/);
    await expect.poll(() => isRunning(orphan), { timeout: 10_000 }).toBe(false);
    const own = Number(fs.readFileSync(pidFile, 'utf8'));
    expect(own).not.toBe(orphan);
    expect(isRunning(own)).toBe(true);
    expect(second.output().stderr).toContain('stopping the private redis-server an earlier run left behind');
    expect(await second.stop()).toBe(0);
    await expect.poll(() => isRunning(own), { timeout: 5_000 }).toBe(false);
  });
});
