import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { privateFileMode, tightenFolder } from '@roster/config';
import { RosterError } from '@roster/errors';
import type pg from 'pg';
import { migrate } from './migrate.js';
import { createPoolDatabase } from './database.js';
import { sharedSocketPool } from './embedded-share.js';
import { canShareFolder, embeddedSocketPath, maxSocketPath } from './host-socket.js';
import { startPasswordGate, type PasswordGate } from './password-gate.js';

/** The user name in the served connection string; the gate accepts no other. */
const servedUser = 'roster';

export interface ServedDatabase {
  /** A connection string for psql, a second Roster process, or an operator; it holds the password. */
  connectionString: string;
  stop(): Promise<void>;
}

/**
 * Expose the embedded database over the Postgres wire protocol on loopback,
 * behind a password made for this run (a loopback port is open to every
 * account on the machine). The database itself listens on a Unix socket in
 * its own folder, which only its owner can reach; the password gate in front
 * of it is the only way in over TCP. It is the socket that every Roster
 * command on this folder shares (see `embedded-share.ts`), so serving works
 * while other commands run, and they keep working while it serves; this
 * process stays one of its clients for the whole run, so the database is
 * there for whoever connects through the gate. The gate admits one
 * connection at a time, and refuses what that connection would leave in
 * the session (PGlite is a single session, which every Roster process on
 * the folder shares: see `session-guard.ts`); Roster processes that connect
 * through it notice and keep a pool of one. A folder whose path is too long for a socket is opened by
 * this process alone, and served on a socket in a private temporary folder.
 */
/** What `roster db serve` is given: the folder, where to listen, and how long a client may idle in a transaction (see `PasswordGateOptions`). */
export interface ServeOptions {
  dataDir: string;
  host?: string;
  port: number;
  idleInTransactionMs?: number;
}

export async function serveEmbeddedDatabase(given: ServeOptions): Promise<ServedDatabase> {
  const options = { ...given, dataDir: path.resolve(given.dataDir) };
  if (!canShareFolder(options.dataDir)) return serveAlone(options);
  const host = options.host ?? '127.0.0.1';
  const pool = sharedSocketPool(options.dataDir, { max: 1 });
  const database = createPoolDatabase({ kind: 'embedded', location: options.dataDir, pool });
  let held: pg.PoolClient | undefined;
  let gate: PasswordGate;
  try {
    // Migrate first, so that whoever connects finds the schema in place.
    await migrate(database);
    held = await pool.connect();
    const password = randomBytes(18).toString('base64url');
    gate = await startPasswordGate({ host, port: options.port, user: servedUser, password, upstreamPath: embeddedSocketPath(options.dataDir), ...idleOption(options) }).catch((error: Error) => {
      throw new RosterError('port_unavailable', `Cannot listen on ${host}:${options.port}: ${error.message}. Pick another port with --port.`, { cause: error });
    });
    return {
      connectionString: `postgres://${servedUser}:${password}@${host}:${gate.port}/postgres?sslmode=disable`,
      async stop() {
        await gate.close();
        held?.release();
        await database.close();
        tightenFolder(options.dataDir);
      },
    };
  } catch (error) {
    held?.release();
    await database.close();
    throw error;
  }
}

/** The database of a folder that cannot be shared, opened by this process alone and served from it. */
async function serveAlone(options: ServeOptions): Promise<ServedDatabase> {
  // Loaded here, not with the package: only this command and the folder's host run PGlite's server.
  const [{ openPglite }, { pglitePool }, { PGLiteSocketServer }] = await Promise.all([
    import('./pglite-open.js'),
    import('./pglite-connection.js'),
    import('@electric-sql/pglite-socket'),
  ]);
  const { pglite, release } = await openPglite(options.dataDir);
  const host = options.host ?? '127.0.0.1';
  const pool = pglitePool(pglite);
  const database = createPoolDatabase({ kind: 'embedded', location: options.dataDir, pool });
  try {
    await migrate(database);
  } catch (error) {
    await pool.end();
    await release();
    throw error;
  }
  await pool.end();
  const socket = privateSocketPath(options.dataDir);
  fs.rmSync(socket.path, { force: true });
  // Two: a closing session may still hold its place for a moment; the gate admits one at a time.
  const server = new PGLiteSocketServer({ db: pglite, path: socket.path, maxConnections: 2 });
  const password = randomBytes(18).toString('base64url');
  let gate: PasswordGate;
  try {
    await server.start();
    fs.chmodSync(socket.path, privateFileMode);
  } catch (error) {
    await release();
    socket.remove();
    throw new RosterError('database_unavailable', `Cannot serve the embedded database on ${socket.path}: ${(error as Error).message}.`, { cause: error });
  }
  try {
    gate = await startPasswordGate({ host, port: options.port, user: servedUser, password, upstreamPath: socket.path, ...idleOption(options) });
  } catch (error) {
    await server.stop();
    socket.remove();
    await release();
    throw new RosterError(
      'port_unavailable',
      `Cannot listen on ${host}:${options.port}: ${(error as Error).message}. Pick another port with --port.`,
      { cause: error },
    );
  }
  return {
    connectionString: `postgres://${servedUser}:${password}@${host}:${gate.port}/postgres?sslmode=disable`,
    async stop() {
      await gate.close();
      await server.stop();
      socket.remove();
      await release();
    },
  };
}

/**
 * Where the database listens for the gate: inside its own folder (700), or,
 * when that path is too long for a Unix socket, in a new private folder
 * under the system's temporary folder (mkdtemp makes it 700).
 */
function privateSocketPath(dataDir: string): { path: string; remove(): void } {
  const inside = path.join(dataDir, '.s.PGSQL.served');
  if (inside.length <= maxSocketPath) return { path: inside, remove: () => fs.rmSync(inside, { force: true }) };
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-served-'));
  return { path: path.join(folder, '.s.PGSQL.served'), remove: () => fs.rmSync(folder, { recursive: true, force: true }) };
}

function idleOption(options: ServeOptions): { idleInTransactionMs?: number } {
  return options.idleInTransactionMs === undefined ? {} : { idleInTransactionMs: options.idleInTransactionMs };
}
