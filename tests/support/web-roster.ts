import { testInstallationKey } from '@roster/config/testing';
import { channelPlugins, channelVariables } from '@roster/channel-registry';
import { randomUUID } from 'node:crypto';
import { createLogger, parseConfig } from '@roster/config';
import type { Person } from '@roster/core';
import type { Database } from '@roster/db';
import { openTestDatabase } from '@roster/db/testing';
import { connectionFromUrl, createQueues, runJobNow, startJobWorker } from '@roster/jobs';
import { createRuntime, type Runtime } from '@roster/runtime';
import { createChannelCredentialStore } from '@roster/channel-host';
import { createLoginLink, createServer } from '@roster/server';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const connection = connectionFromUrl(redisUrl);

/** How the browser tests launch Debian's Chromium. */
export const chromiumLaunch = {
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
};

export interface WebRoster {
  /** Where the server listens: `http://127.0.0.1:PORT`. */
  address: string;
  database: Database;
  runtime: Runtime;
  owner: Person;
  /** A fresh one-time login link (for the owner unless another person is named), as `roster login-link` prints it. */
  loginLink(person?: Person): Promise<string>;
  /** A signed-in session's cookie, for a browser context that starts signed in. */
  sessionCookie(): Promise<{ name: string; value: string }>;
  addAgent(name: string, job: string): Promise<void>;
  /** Run a job now through the queues and the worker, and wait for its result. */
  runJob(name: Parameters<typeof runJobNow>[1], payload?: Record<string, unknown>): Promise<Record<string, unknown>>;
  cleanup(): Promise<void>;
}

/**
 * Roster as `roster start` runs it, for a browser: the real server listening
 * on a free loopback port over the real runtime (offline engine) on a PGlite
 * database of its own, and a job worker on the machine's Redis under a queue
 * prefix of its own, with Bull Board on those queues. `env` adds to the
 * environment (a judge engine, say).
 */
export async function startWebRoster(env: Record<string, string> = {}): Promise<WebRoster> {
  const test = await openTestDatabase();
  const config = parseConfig({ LOG_LEVEL: 'silent', HOST: '127.0.0.1', ...env }, channelVariables);
  const runtime = await createRuntime({ config, database: test.database, key: testInstallationKey });
  const owner = await runtime.core.directory.addPerson({ name: 'Ada', role: 'owner' });
  const prefix = `test-${randomUUID()}`;
  const worker = await startJobWorker({
    database: test.database,
    memory: runtime.memory,
    directory: runtime.core.directory,
    engineFor: runtime.engineFor,
    judgeFor: runtime.judgeFor,
    connection,
    prefix,
    schedulers: false,
    relayIntervalMs: 100,
  });
  // The same queues the worker takes from, for Bull Board.
  const queueSet = createQueues(connection, prefix);
  const app = await createServer({
    queues: Object.values(queueSet.queues),
    config,
    database: test.database,
    runtime,
    redisUrl,
    logger: createLogger(config),
    key: testInstallationKey,
    channels: { credentials: createChannelCredentialStore(test.database, testInstallationKey, channelPlugins) },
  });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    address,
    database: test.database,
    runtime,
    owner,
    async loginLink(person = owner) {
      const { token } = await createLoginLink(test.database, person.id);
      return `${address}/login#${token}`;
    },
    async sessionCookie() {
      const { token } = await createLoginLink(test.database, owner.id);
      const response = await fetch(`${address}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
      if (!response.ok) throw new Error(`login failed: ${response.status} ${await response.text()}`);
      const [pair] = (response.headers.get('set-cookie') ?? '').split(';');
      const [name, value] = (pair ?? '').split('=');
      if (name === undefined || value === undefined) throw new Error('login set no cookie');
      return { name, value };
    },
    async addAgent(name, job) {
      await runtime.core.directory.addAgent({ name, job });
    },
    async runJob(name, payload = {}) {
      const { result } = await runJobNow(connection, name, payload, { prefix, wait: true, timeoutMs: 60_000 });
      return result as Record<string, unknown>;
    },
    async cleanup() {
      await app.close();
      await worker.stop();
      await Promise.all(Object.values(queueSet.queues).map((queue) => queue.obliterate({ force: true })));
      await queueSet.close();
      await test.cleanup();
    },
  };
}
