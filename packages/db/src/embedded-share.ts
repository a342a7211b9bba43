import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makePrivateFolder } from '@roster/config/files';
import { RosterError } from '@roster/errors';
import pg from 'pg';
import { dataDirHolder } from './data-dir-lock.js';
import { embeddedSocketPath, type HostReport } from './host-socket.js';

/**
 * How an embedded database folder is shared by every Roster command that uses
 * it at once (five `roster chat` beside `roster start`, `roster db serve`…).
 *
 * PGlite is one process's database, so one process holds the folder: a small
 * host process (`embedded-host.ts`) that the first command starts, detached.
 * It serves the folder on a Unix socket inside it, and every command, the
 * first included, is its client through that socket. The host belongs to no
 * command: it leaves only when no command has been connected for a moment,
 * so a command that ends never cuts off another, and nothing is lost
 * mid-turn. A command that connects while the folder is free starts a host;
 * while a host is starting (the lock taken, the socket not there yet) or
 * leaving, it polls, for at most `hostWaitMs`. Connecting is the only step
 * ever repeated, and nothing has been sent then, so it is always safe.
 * PGlite runs one statement at a time and keeps each connection's
 * transaction whole; concurrent migrations are serialised like any other
 * transactions.
 */

/**
 * How long a command waits for another process's host that is starting or
 * leaving before it gives up, and for a host it started to open the folder.
 * Creating a new folder's database takes seconds, and many more on a busy
 * machine with several commands starting at once.
 */
export const hostWaitMs = 60_000;
const pollMs = 100;
/** A host that says it is ready yet cannot be reached is not started again and again. */
const maxHostStarts = 3;

/** The host script, built beside this file (`../dist` also from the sources, for the package's own tests). */
const hostScript = fileURLToPath(new URL('../dist/embedded-host.js', import.meta.url));

export interface SharedPoolOptions {
  /** Connections this process may open at once. */
  max: number;
  /** Told of an idle connection that failed (its host stopped). */
  onError?: (error: Error) => void;
  /** How long a connection waits for a host that is starting or leaving; `hostWaitMs` unless said. */
  waitMs?: number;
}

/**
 * A node-postgres pool over the host of `dataDir`, which starts or waits for
 * the host whenever a new connection finds none. Idle connections are kept
 * while the process runs, so a long-running command keeps the host up and
 * finds it there; `end()` lets it go.
 */
export function sharedSocketPool(folder: string, options: SharedPoolOptions): pg.Pool {
  const dataDir = path.resolve(folder);
  const pool = new SharedSocketPool(dataDir, options.waitMs ?? hostWaitMs, {
    host: dataDir,
    port: 5432,
    user: 'postgres',
    database: 'postgres',
    max: options.max,
    idleTimeoutMillis: 0,
    // Connecting waits behind another command's open transaction: generous.
    connectionTimeoutMillis: 30_000,
  });
  pool.on('error', (error) => options.onError?.(error));
  keepErrorsOfClientsInUse(pool);
  return pool;
}

/**
 * pg's pool listens for errors only on idle connections: one in use whose
 * socket ends (its host or server stopped) emits an 'error' event nobody
 * hears, which ends the process. Heard here, it ends nothing: the statement
 * running on it fails with that error all the same, and a later one with
 * "not queryable", and the caller reports it.
 */
export function keepErrorsOfClientsInUse(pool: pg.Pool): void {
  pool.on('connect', (client) => client.on('error', () => {}));
}

type ConnectCallback = (error: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void;

class SharedSocketPool extends pg.Pool {
  readonly #dataDir: string;
  readonly #waitMs: number;

  constructor(dataDir: string, waitMs: number, config: pg.PoolConfig) {
    super(config);
    this.#dataDir = dataDir;
    this.#waitMs = waitMs;
  }

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
    const connected = this.#connectThroughHost();
    if (callback === undefined) return connected;
    connected.then(
      (client) => callback(undefined, client, (release?: unknown) => client.release(release as boolean | Error | undefined)),
      (error: Error) => callback(error, undefined, () => {}),
    );
  }

  async #connectThroughHost(): Promise<pg.PoolClient> {
    let deadline = Date.now() + this.#waitMs;
    let started = 0;
    for (;;) {
      try {
        return await super.connect();
      } catch (error) {
        if (this.ending || !isNoHost(error)) throw error;
        if (started === maxHostStarts) {
          throw new RosterError('database_unavailable', `The embedded database in ${this.#dataDir} was opened but does not answer on ${embeddedSocketPath(this.#dataDir)}: ${(error as Error).message}.`, { cause: error });
        }
        if ((await reachHost(this.#dataDir, deadline, this.#waitMs)) === 'started') {
          // Its own host took the time it took; what follows is waited for afresh.
          started += 1;
          deadline = Date.now() + this.#waitMs;
        }
      }
    }
  }
}

/** The errors of a connection attempt that found no host listening (or one just leaving). */
function isNoHost(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE') return true;
  return /Connection terminated unexpectedly/.test((error as Error).message ?? '');
}

/**
 * Make it worth connecting again: start a host when nobody holds the folder,
 * or wait a moment for the one that does. Throws once `deadline` has passed.
 */
async function reachHost(dataDir: string, deadline: number, waitMs: number): Promise<'started' | 'waited'> {
  const holder = dataDirHolder(dataDir);
  if (holder !== undefined) {
    if (Date.now() >= deadline) {
      const who = holder.pid === undefined ? 'another process' : `process ${holder.pid}`;
      throw new RosterError(
        'database_busy',
        `The embedded database in ${dataDir} did not answer within ${waitMs / 1000} s: ${who} holds it. Wait for that process to finish (or stop it), then run this again.`,
        { retryable: true },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    return 'waited';
  }
  makePrivateFolder(dataDir);
  const outcome = await startHost(dataDir);
  if (outcome.kind === 'failed') throw new RosterError('database_unavailable', outcome.message);
  // Ready, or another command's host took the folder first: either way, connect again.
  return outcome.kind === 'ready' ? 'started' : 'waited';
}

/** Start the host of `dataDir`, detached, and wait for its first word (at most `hostWaitMs`). */
function startHost(dataDir: string): Promise<HostReport> {
  return new Promise((resolve) => {
    // Its own session, no terminal, no environment: it needs none, and holds no secret of the command.
    const child = spawn(process.execPath, [hostScript, dataDir], { detached: true, stdio: ['ignore', 'ignore', 'ignore', 'ipc'], env: {}, cwd: dataDir });
    let settled = false;
    const settle = (outcome: HostReport) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (child.connected) child.disconnect();
      child.unref();
      resolve(outcome);
    };
    const timer = setTimeout(
      () => settle({ kind: 'failed', message: `The embedded database in ${dataDir} did not open within ${hostWaitMs / 1000} s (process ${child.pid} is still opening it). Run this again in a moment.` }),
      hostWaitMs,
    );
    child.on('message', (message: HostReport) => settle(message));
    child.on('error', (error) => settle({ kind: 'failed', message: `The embedded database in ${dataDir} could not be opened: ${error.message}.` }));
    child.on('exit', (code) => {
      const stopped = () =>
        settle({ kind: 'failed', message: `The embedded database in ${dataDir} could not be opened: its process stopped (exit code ${code}) before it was ready. Run this again; if it keeps failing, keep the folder as it is and see "The embedded database does not open" in docs/operations.md.` });
      // What it said before it stopped is read before its channel closes.
      if (child.connected) child.once('disconnect', stopped);
      else stopped();
    });
  });
}
