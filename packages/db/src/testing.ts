import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Database } from './database.js';
import { migrate } from './migrate.js';
import { openEmbeddedDatabase, openServerDatabase } from './open.js';

export interface TestDatabase {
  database: Database;
  /** `embedded` (PGlite in memory) or `server` (a fresh database on TEST_DATABASE_URL). */
  kind: 'embedded' | 'server';
  /** Closes the database and, on a server, drops the database made for this test. */
  cleanup(): Promise<void>;
}

/**
 * A database of its own for one test: PGlite in memory, or, when
 * `TEST_DATABASE_URL` names a server Postgres with pgvector, a new database
 * created on it and dropped afterwards. Shared tables are never touched.
 */
export async function openTestDatabase(options: { migrate?: boolean; serverUrl?: string | undefined } = {}): Promise<TestDatabase> {
  const serverUrl = options.serverUrl ?? process.env.TEST_DATABASE_URL;
  let database: Database;
  let dropDatabase = async () => {};
  if (serverUrl === undefined || serverUrl === '') {
    database = await openEmbeddedDatabase('memory://');
  } else {
    const name = `roster_test_${randomUUID().replaceAll('-', '')}`;
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    try {
      await admin.query(`create database ${name}`);
    } finally {
      await admin.end();
    }
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    database = await openServerDatabase(url.toString());
    dropDatabase = async () => {
      const dropper = new pg.Client({ connectionString: serverUrl });
      await dropper.connect();
      try {
        await dropper.query(`drop database if exists ${name} with (force)`);
      } finally {
        await dropper.end();
      }
    };
  }
  if (options.migrate !== false) await migrate(database);
  return {
    database,
    kind: database.kind,
    async cleanup() {
      await database.close();
      await dropDatabase();
    },
  };
}
