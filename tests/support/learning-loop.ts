import { randomUUID } from 'node:crypto';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { connectionFromUrl, createQueues, runJobNow, startJobWorker, type JobWorker } from '@roster/jobs';
import { createRuntime, type Runtime } from '@roster/runtime';

export const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const connection = connectionFromUrl(redisUrl);

export interface LoopFixture {
  test: TestDatabase;
  roster: Runtime;
  worker: JobWorker;
  /** The queues' key prefix, this fixture's own. */
  prefix: string;
  ids: { scout: string; coder: string; ada: string; bob: string };
  /** Run a job now through the queues and the worker, and wait for its result. */
  run(name: Parameters<typeof runJobNow>[1], payload?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Stop the worker, empty this fixture's queues, drop its database. */
  cleanup(): Promise<void>;
}

/**
 * The learning loop as it runs: a migrated test database, the real runtime
 * with `judgeEngine` judging mirror replays (none: each agent's own engine), Scout and Coder, Ada (the owner)
 * and Bob, and a job worker on the machine's Redis under a prefix of its own.
 */
export async function startLoopFixture(judgeEngine?: string): Promise<LoopFixture> {
  const test = await openTestDatabase();
  const roster = await createRuntime({ config: { ...parseConfig({}), ...(judgeEngine === undefined ? {} : { ROSTER_JUDGE_ENGINE: judgeEngine }) }, database: test.database, key: testInstallationKey });
  const scout = await roster.core.directory.addAgent({ name: 'Scout', job: 'plans trips' });
  const coder = await roster.core.directory.addAgent({ name: 'Coder', job: 'writes code' });
  const ada = await roster.core.directory.addPerson({ name: 'Ada', role: 'owner' });
  const bob = await roster.core.directory.addPerson({ name: 'Bob' });
  const prefix = `test-${randomUUID()}`;
  const worker = await startJobWorker({
    database: test.database,
    memory: roster.memory,
    directory: roster.core.directory,
    engineFor: roster.engineFor,
    judgeFor: roster.judgeFor,
    connection,
    prefix,
    schedulers: false,
    relayIntervalMs: 100,
  });
  return {
    test,
    roster,
    worker,
    prefix,
    ids: { scout: scout.id, coder: coder.id, ada: ada.id, bob: bob.id },
    async run(name, payload = {}) {
      const { result } = await runJobNow(connection, name, payload, { prefix, wait: true, timeoutMs: 60_000 });
      return result as Record<string, unknown>;
    },
    async cleanup() {
      await worker.stop();
      const queues = createQueues(connection, prefix);
      await Promise.all(Object.values(queues.queues).map((queue) => queue.obliterate({ force: true })));
      await queues.close();
      await test.cleanup();
    },
  };
}
