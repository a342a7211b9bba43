/**
 * The job pipeline when its parts fail: Redis away while turns go on (the
 * outbox keeps every job, and each reaches BullMQ exactly once when Redis
 * returns), and a worker killed in the middle of a job (another worker takes
 * it up, and its effect is applied once).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseConfig } from '@roster/config';
import { testInstallationKey, testSecretKey } from '@roster/config/testing';
import { migrate, openEmbeddedDatabase, type Database } from '@roster/db';
import { openTestDatabase } from '@roster/db/testing';
import { connectionFromUrl, createQueues, jobNames, relayOutbox, type QueueSet, type RelayReport } from '@roster/jobs';
import { contentHash, createAuditLog } from '@roster/memory';
import { pingRedis } from '@roster/redis';
import { createRuntime } from '@roster/runtime';
import type { Job } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, isRunning, startRoster, tempDataDir } from './support/roster-process.js';
import { eventually } from './support/eventually.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()!();
    } catch {
      // keep cleaning up the rest
    }
  }
});

/** Reject with `message` if `promise` has not settled in `ms`: a hang becomes a failure that says what hung. */
function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]).finally(() => clearTimeout(timer));
}

/** A redis-server of this test alone, on a loopback port, keeping nothing on disk. */
interface PrivateRedis {
  url: string;
  stop(): Promise<void>;
}

async function startRedisServer(port: number): Promise<PrivateRedis> {
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `redis://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
        return pingRedis(url, 500).then(
          () => true,
          () => undefined,
        );
      },
      `redis-server on port ${port}`,
      10_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, stop };
}

const jobStates = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'paused', 'completed', 'failed'] as const;

/** Every job in every queue of the set, whatever its state. */
async function allJobs(queues: QueueSet): Promise<Job[]> {
  const jobs: Job[] = [];
  for (const name of jobNames) jobs.push(...(await queues.queues[name].getJobs([...jobStates])));
  return jobs;
}

/** The sum of BullMQ's own counts over every queue and state. */
async function countJobs(queues: QueueSet): Promise<number> {
  let total = 0;
  for (const name of jobNames) {
    const counts = await queues.queues[name].getJobCounts(...jobStates);
    total += Object.values(counts).reduce((sum, count) => sum + count, 0);
  }
  return total;
}

async function outboxRows(database: Database): Promise<Array<{ id: string; queue: string; relayed: boolean; attempts: number; lastError: string | null }>> {
  return database.adminScope('test: read the outbox', async (tx) => {
    const { rows } = await tx.query<{ id: string; queue: string; relayed_at: Date | null; attempts: number; last_error: string | null }>(
      'select id, queue, relayed_at, attempts, last_error from outbox order by id',
    );
    return rows.map((row) => ({ id: row.id, queue: row.queue, relayed: row.relayed_at !== null, attempts: row.attempts, lastError: row.last_error }));
  });
}

describe('outbox relay while Redis is away', () => {
  it('keeps turns working and every job pending; when Redis returns, each job arrives exactly once', async () => {
    const port = await freePort();
    let redis = await startRedisServer(port);
    cleanups.push(() => redis.stop());
    const test = await openTestDatabase();
    cleanups.push(() => test.cleanup());
    const { database } = test;
    const roster = await createRuntime({ config: parseConfig({}), database, key: testInstallationKey });
    const scout = await roster.core.directory.addAgent({ name: 'Scout', job: 'the Scout job' });
    const ada = await roster.core.directory.addPerson({ name: 'Ada' });

    const prefix = `test-${randomUUID()}`;
    // One producer connected before Redis goes away, one made while it is away (it never had a connection).
    const queues = createQueues(connectionFromUrl(redis.url), prefix);
    cleanups.push(() => within(queues.close(), 10_000, 'closing the queues hung'));
    await queues.queues.fade.waitUntilReady();

    await redis.stop();
    const lateQueues = createQueues(connectionFromUrl(redis.url), prefix);
    cleanups.push(() => within(lateQueues.close(), 10_000, 'closing the late queues hung'));

    // Turns succeed without Redis: their jobs go to the outbox in Postgres.
    const said = ['remember that my desk is on floor 3', 'remember that my badge number is 4411', "that's wrong, my desk is on floor 4", 'remember that I park in lot B'];
    for (const [index, text] of said.entries()) {
      const turn = await roster.core.handle(
        { channel: 'cli', conversation: { externalId: 'cli-ada-scout', kind: 'dm' }, sender: { personId: ada.id }, externalMessageId: `m-${index}`, text },
        { agent: scout.name },
      );
      expect(turn.replies).toHaveLength(1);
    }
    const written = await outboxRows(database);
    // Positive control: the turns did write jobs (extract for each turn, harvest for the correction).
    expect(written.length).toBeGreaterThan(0);
    expect(written.filter((row) => row.queue === 'extract')).toHaveLength(said.length);
    expect(written.filter((row) => row.queue === 'harvest').length).toBeGreaterThan(0);

    // Against a dead Redis the relay reports failure and returns; it does not wait for Redis.
    const whileDown: RelayReport = await within(relayOutbox(database, queues), 15_000, 'relayOutbox hung on a connected producer while Redis was down');
    expect(whileDown).toEqual({ relayed: 0, failed: 1 });
    const lateWhileDown = await within(relayOutbox(database, lateQueues, { timeoutMs: 1000 }), 15_000, 'relayOutbox hung on a never-connected producer');
    expect(lateWhileDown).toEqual({ relayed: 0, failed: 1 });
    const pending = await outboxRows(database);
    expect(pending.filter((row) => row.relayed)).toEqual([]);
    expect(pending.length).toBe(written.length);
    expect(pending.find((row) => row.lastError !== null)?.lastError).toMatch(/enableOfflineQueue|did not answer|Connection|ECONNREFUSED/i);

    // Redis returns on the same port (empty: it kept nothing on disk).
    redis = await startRedisServer(port);
    const reports: RelayReport[] = [];
    await eventually(
      async () => {
        const report = await relayOutbox(database, queues);
        reports.push(report);
        return report.failed === 0 && (await outboxRows(database)).every((row) => row.relayed) ? true : undefined;
      },
      'the relay to hand every row to the returned Redis',
      30_000,
      250,
    );
    expect(reports.reduce((sum, report) => sum + report.relayed, 0)).toBe(written.length);

    const ids = written.map((row) => row.id).sort();
    const jobIds = async (set: QueueSet) => (await allJobs(set)).map((job) => job.id!).sort();
    expect(await jobIds(queues)).toEqual(ids);
    expect(await countJobs(queues)).toBe(written.length);
    // Each job went to the queue its row names.
    const byId = new Map(written.map((row) => [row.id, row.queue]));
    for (const job of await allJobs(queues)) expect(job.queueName).toBe(byId.get(job.id!));

    // Relaying again moves nothing.
    expect(await relayOutbox(database, queues)).toEqual({ relayed: 0, failed: 0 });

    // A crash between the add and the mark: some rows look pending again. The job id is the row id, so each is still one job.
    const replayed = ids.filter((_, index) => index % 2 === 0);
    await database.adminScope('test: forget that some rows were relayed', (tx) => tx.query('update outbox set relayed_at = null where id = any($1)', [replayed]));
    // The producer that never had a connection reaches the returned Redis too.
    const again = await eventually(
      async () => {
        const report = await relayOutbox(database, lateQueues, { timeoutMs: 1000 });
        return report.failed === 0 ? report : undefined;
      },
      'the late producer to reach the returned Redis',
      30_000,
      250,
    );
    expect(again).toEqual({ relayed: replayed.length, failed: 0 });
    expect(await jobIds(queues)).toEqual(ids);
    expect(await countJobs(queues)).toBe(written.length);
    expect((await outboxRows(database)).every((row) => row.relayed)).toBe(true);
  });
});

/** How many facts, in `scopes` scopes, were recorded 60 days ago and are eligible to fade; `recent` more are not. */
const fadeSetup = { scopes: 6, perScope: 500, recent: 30 };

async function seedFacts(database: Database): Promise<{ eligible: number; recent: number }> {
  return database.adminScope('test: seed old facts', async (tx) => {
    const scopes: Array<{ agentId: string; personId: string }> = [];
    for (let index = 0; index < fadeSetup.scopes; index += 1) {
      const agent = await tx.query<{ id: string }>(`insert into agents (name, job) values ($1, 'a test agent') returning id`, [`agent-${index}`]);
      const person = await tx.query<{ id: string }>(`insert into people (name, role) values ($1, 'member') returning id`, [`person ${index}`]);
      scopes.push({ agentId: agent.rows[0]!.id, personId: person.rows[0]!.id });
    }
    const insert = async (scope: { agentId: string; personId: string }, contents: string[], daysAgo: number) => {
      await tx.query(
        `insert into facts (agent_id, person_id, audience, content, content_hash, trust, recorded_at)
         select $1, $2, 'private', content, content_hash, 'active', now() - make_interval(days => $5)
         from unnest($3::text[], $4::text[]) as t(content, content_hash)`,
        [scope.agentId, scope.personId, contents, contents.map(contentHash), daysAgo],
      );
    };
    for (const [index, scope] of scopes.entries()) {
      const old = Array.from({ length: fadeSetup.perScope }, (_, n) => `person ${index} keeps item ${n} in drawer ${n % 7}`);
      await insert(scope, old, 60);
    }
    // A negative control: facts too recent to fade.
    const recent = Array.from({ length: fadeSetup.recent }, (_, n) => `person 0 bought thing ${n} yesterday`);
    await insert(scopes[0]!, recent, 1);
    return { eligible: fadeSetup.scopes * fadeSetup.perScope, recent: fadeSetup.recent };
  });
}

async function fadeState(database: Database) {
  return database.adminScope('test: read fade state', async (tx) => {
    const facts = await tx.query<{ trust: string; count: string }>('select trust, count(*) from facts group by trust');
    const events = await tx.query<{ target_id: string; id: string }>(`select target_id, id from memory_events where action = 'fade'`);
    const trust = Object.fromEntries(facts.rows.map((row) => [row.trust, Number(row.count)]));
    return { faded: trust.faded ?? 0, active: trust.active ?? 0, events: events.rows };
  });
}

/** An embedded database served from this process, seeded with old facts; workers of its own queue prefix. */
async function fadeFixture() {
  const dir = tempDataDir();
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  // This process owns the embedded database and serves it on the socket in the data folder; the workers share it.
  const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
  cleanups.push(() => database.close());
  await migrate(database);
  const seeded = await seedFacts(database);

  const redisUrl = 'redis://127.0.0.1:6379';
  const prefix = `test-${randomUUID()}`;
  const queues = createQueues(connectionFromUrl(redisUrl), prefix);
  cleanups.push(async () => {
    for (const name of jobNames) await queues.queues[name].obliterate({ force: true });
    await queues.close();
  });
  // The workers hold the key the test wrote memory with.
  const env = { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: prefix, ROSTER_JOB_LOCK_SECONDS: '2', REDIS_URL: redisUrl, ROSTER_SECRET_KEY: testSecretKey };
  const startWorker = async () => {
    const worker = startRoster(['worker'], env);
    cleanups.push(async () => {
      if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
      await worker.stop();
    });
    await worker.waitForOutput(/worker is running/);
    return worker;
  };
  /** Wait until the job has committed some batches; returns how many facts it reports faded. */
  const progressOf = (jobId: string) =>
    eventually(
      async () => {
        const current = await queues.queues.fade.getJob(jobId);
        const faded = (current?.progress as { faded?: number } | undefined)?.faded ?? 0;
        return faded > 0 ? faded : undefined;
      },
      'the fade job to report progress',
      60_000,
      20,
    );
  const completion = (jobId: string) =>
    eventually(
      async () => {
        const current = await queues.queues.fade.getJob(jobId);
        const state = await current?.getState();
        if (state === 'failed') throw new Error(`the fade job failed: ${current?.failedReason}`);
        // Read again once completed: the record read before the state may predate the completion (attemptsMade still 0).
        return state === 'completed' ? queues.queues.fade.getJob(jobId) : undefined;
      },
      'the fade job to complete',
      90_000,
      100,
    );
  return { database, queues, startWorker, progressOf, completion, ...seeded };
}

/** Every eligible fact faded, the recent ones not, one fade event per faded fact, chains whole. */
async function expectFadedOnce(database: Database, eligible: number, recent: number) {
  const after = await fadeState(database);
  expect(after.faded).toBe(eligible);
  expect(after.active).toBe(recent);
  expect(after.events.length).toBe(after.faded);
  expect(new Set(after.events.map((event) => event.target_id)).size).toBe(after.events.length);
  expect((await createAuditLog({ database, key: testInstallationKey }).verify()).every((chain) => chain.ok)).toBe(true);
  return after;
}

describe('a worker that stops in the middle of a job', () => {
  it('killed: its job is taken up by another worker, which fades what is left; every fact fades exactly once', async () => {
    const { database, queues, startWorker, progressOf, completion, eligible, recent } = await fadeFixture();
    const first = await startWorker();
    const job = await queues.queues.fade.add('fade', { batchSize: 25 });
    // Kill the first worker once it has committed some batches, with more to go.
    const progressAtKill = await progressOf(job.id!);
    first.child.kill('SIGKILL');
    await first.stop();
    expect(progressAtKill).toBeLessThan(eligible);
    // What the first worker committed (a batch open at the kill is rolled back when its connection drops).
    const atKill = await fadeState(database);
    expect(atKill.faded).toBeGreaterThanOrEqual(progressAtKill);
    expect(atKill.faded).toBeLessThan(eligible);
    expect(atKill.events.length).toBe(atKill.faded);
    expect((await queues.queues.fade.getJob(job.id!))?.finishedOn).toBeUndefined();

    const second = await startWorker();
    const finished = (await completion(job.id!))!;

    // BullMQ's record of the job: found stalled once (lock ran out), started a second time, one attempt made.
    const record = { attemptsStarted: finished.attemptsStarted, attemptsMade: finished.attemptsMade, stalledCounter: finished.stalledCounter, returnvalue: finished.returnvalue };
    expect(record).toMatchObject({ stalledCounter: 1, attemptsStarted: 2, attemptsMade: 1 });
    // The second run faded only what the first had left: committed work is not redone.
    expect(record.returnvalue).toMatchObject({ faded: eligible - atKill.faded });

    const after = await expectFadedOnce(database, eligible, recent);
    // The first worker's events are still there, unchanged.
    const afterIds = new Set(after.events.map((event) => event.id));
    expect(atKill.events.every((event) => afterIds.has(event.id))).toBe(true);

    // The surviving worker stops cleanly on SIGTERM.
    expect(await within(second.stop(), 30_000, 'the worker did not stop on SIGTERM')).toBe(0);
    expect(isRunning(second.child.pid!)).toBe(false);
  }, 180_000);

  it('stopped (SIGTERM): it hands the job back at the next batch, without spending an attempt, and exits', async () => {
    const { database, queues, startWorker, progressOf, completion, eligible, recent } = await fadeFixture();
    const first = await startWorker();
    const job = await queues.queues.fade.add('fade', { batchSize: 25 });
    await progressOf(job.id!);
    expect(await within(first.stop(), 30_000, 'the worker did not stop on SIGTERM in the middle of a job')).toBe(0);
    // Handed back, not finished and not failed: it waits for the next worker.
    const handedBack = (await queues.queues.fade.getJob(job.id!))!;
    expect(await handedBack.getState()).toBe('waiting');
    expect(handedBack.attemptsMade).toBe(0);
    const atStop = await fadeState(database);
    expect(atStop.faded).toBeGreaterThan(0);
    expect(atStop.faded).toBeLessThan(eligible);

    const second = await startWorker();
    const finished = (await completion(job.id!))!;
    expect(finished.returnvalue).toMatchObject({ faded: eligible - atStop.faded });
    expect(finished.attemptsMade).toBe(1);
    expect(finished.stalledCounter).toBe(0);
    await expectFadedOnce(database, eligible, recent);
    expect(await within(second.stop(), 30_000, 'the worker did not stop on SIGTERM')).toBe(0);
  }, 180_000);
});
