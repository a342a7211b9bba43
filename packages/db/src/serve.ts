import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { RosterError } from '@roster/errors';
import { migrate } from './migrate.js';
import { createPoolDatabase } from './database.js';
import { openPglite } from './open.js';
import { pglitePool } from './pglite-connection.js';
import pg from 'pg';

export interface ServedDatabase {
  /** A connection string for psql, a second Roster process, or an operator. */
  connectionString: string;
  stop(): Promise<void>;
}

/**
 * Expose the embedded database over the Postgres wire protocol on loopback.
 * PGlite is a single session, so the server takes one connection at a time;
 * Roster processes that connect to it notice and keep a pool of one.
 */
export async function serveEmbeddedDatabase(options: { dataDir: string; host?: string; port: number }): Promise<ServedDatabase> {
  const { pglite, release } = await openPglite(options.dataDir);
  const host = options.host ?? '127.0.0.1';
  // Migrate first, so that whoever connects finds the schema in place.
  const pool = pglitePool(pglite);
  const database = createPoolDatabase({ kind: 'embedded', location: options.dataDir, pool });
  try {
    await migrate(database);
  } finally {
    await pool.end();
  }
  const server = new PGLiteSocketServer({ db: pglite, host, port: options.port, maxConnections: 1 });
  try {
    await server.start();
  } catch (error) {
    await release();
    throw new RosterError(
      'port_unavailable',
      `Cannot listen on ${host}:${options.port}: ${(error as Error).message}. Pick another port with --port.`,
      { cause: error },
    );
  }
  return {
    connectionString: `postgres://postgres@${host}:${options.port}/postgres?sslmode=disable`,
    async stop() {
      await server.stop();
      await release();
    },
  };
}
