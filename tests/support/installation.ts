import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { testSecretKey } from '@roster/config/testing';
import { openEmbeddedDatabase, openServerDatabase, type Database } from '@roster/db';
import { createTestServerDatabase } from '@roster/db/testing';
import { Redis } from 'ioredis';
import pg from 'pg';
import { tempDataDir } from './roster-process.js';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * One Roster installation for a test or a benchmark, as its processes see it:
 * a database (a data folder's embedded database, or a database of its own on
 * a server Postgres), the machine's Redis and a queue prefix of its own.
 */
export interface TestInstallation {
  kind: 'embedded' | 'server';
  /** What every `roster` command of the installation runs with: DATABASE_URL or ROSTER_DATA_DIR, REDIS_URL, ROSTER_QUEUE_PREFIX. */
  env: Record<string, string>;
  redisUrl: string;
  /** The installation's queue prefix in Redis. */
  prefix: string;
  /** The installation's database opened apart from its processes, to read what they left (the caller closes it). */
  openDatabase(): Promise<Database>;
  /** Drops the database or removes the folder, and the prefix's keys in Redis. Its processes must have ended. */
  remove(): Promise<void>;
}

/** A data folder of its own (started from the test cluster, see `tempDataDir`), on the embedded database. */
export async function embeddedInstallation(): Promise<TestInstallation> {
  const dir = tempDataDir();
  const prefix = `test-${randomUUID()}`;
  return {
    kind: 'embedded',
    env: { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: prefix, REDIS_URL: redisUrl },
    redisUrl,
    prefix,
    openDatabase: () => openEmbeddedDatabase(path.join(dir, 'pglite')),
    async remove() {
      await dropQueueKeys(prefix);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A database of its own on the server Postgres `adminUrl` names (created
 * empty: the first `roster` command migrates it), reached as that role. A
 * server installation needs ROSTER_SECRET_KEY; its data folder is an empty
 * one of its own, so that nothing lands in the working directory.
 */
export async function serverInstallation(adminUrl: string): Promise<TestInstallation> {
  const database = await createTestServerDatabase(adminUrl);
  const dir = tempDataDir({ fresh: true });
  const prefix = `test-${randomUUID()}`;
  return {
    kind: 'server',
    env: { DATABASE_URL: database.url, ROSTER_SECRET_KEY: testSecretKey, ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: prefix, REDIS_URL: redisUrl },
    redisUrl,
    prefix,
    openDatabase: () => openServerDatabase(database.url),
    async remove() {
      await dropQueueKeys(prefix);
      await database.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * TEST_DATABASE_URL, an administrator's connection to a Postgres with
 * pgvector; without it, an error that says so. The suites of tests/server
 * exist to try a server: without one they fail, they do not pass by trying nothing.
 */
export function requireServerUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (url === undefined || url === '') {
    throw new Error('npm run test:server needs TEST_DATABASE_URL: an administrator\'s connection to a Postgres with pgvector (see docs/operations.md, "Roles and grants").');
  }
  return url;
}

/** Remove every key under a queue prefix from the machine's Redis. */
export async function dropQueueKeys(prefix: string): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    await redis.quit();
  }
}

/** Run `fn` on one connection to `url` (a server Postgres), closed afterwards. */
export async function onServer<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
