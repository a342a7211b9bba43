import path from 'node:path';
import { makePrivateFolder, redactUrl, tightenFolder, type Config, type Logger } from '@roster/config';
import { RosterError } from '@roster/errors';
import pg from 'pg';
import { createPoolDatabase, type Database } from './database.js';
import { DataDirInUseError } from './data-dir-lock.js';
import { hostWaitMs, keepErrorsOfClientsInUse, sharedSocketPool } from './embedded-share.js';
import { canShareFolder } from './host-socket.js';

/**
 * PGlite in this process: loaded only by a command that opens a database in
 * memory or alone. One that connects to a folder's host needs only pg, and
 * never parses PGlite's half a megabyte of source.
 */
async function inProcess(): Promise<typeof import('./pglite-open.js') & typeof import('./pglite-connection.js')> {
  const [open, connection] = await Promise.all([import('./pglite-open.js'), import('./pglite-connection.js')]);
  return { ...open, ...connection };
}

/** The oldest pgvector Roster accepts: iterative index scans arrived in 0.8. */
export const minimumPgvector = '0.8.0';

export interface OpenDatabaseOptions {
  config: Pick<Config, 'DATABASE_URL' | 'ROSTER_DATA_DIR'>;
  logger: Logger;
}

/**
 * Open the product's database: the server Postgres of DATABASE_URL, checked
 * for pgvector, or else the embedded one in ROSTER_DATA_DIR.
 */
export async function openDatabase({ config, logger }: OpenDatabaseOptions): Promise<Database> {
  const log = logger.child({ component: 'db' });
  if (config.DATABASE_URL !== undefined) return openServerDatabase(config.DATABASE_URL, log);
  makePrivateFolder(config.ROSTER_DATA_DIR);
  return openEmbeddedDatabase(embeddedDataDir(config.ROSTER_DATA_DIR), log);
}

/** Where the embedded database keeps its files inside the data folder. */
export function embeddedDataDir(dataDir: string): string {
  return path.join(dataDir, 'pglite');
}

/**
 * The embedded database. `memory://` is reached in process. A folder is
 * shared by every Roster command that uses it at once: its host process
 * serves it on a Unix socket inside the folder (owner-only, like the folder),
 * and this process is one of its clients; see `embedded-share.ts`. When the
 * folder's path is too long for a Unix socket, this process opens it alone,
 * after waiting a bounded time for any other holder to finish.
 */
export async function openEmbeddedDatabase(folder: string, logger?: Logger): Promise<Database> {
  const onAdmin = (reason: string) => logger?.debug({ reason }, 'admin scope');
  if (folder.startsWith('memory://')) {
    const { openPglite, pglitePool } = await inProcess();
    const { pglite, release } = await openPglite(folder);
    return createPoolDatabase({ kind: 'embedded', location: folder, pool: pglitePool(pglite), onClose: release, onAdmin });
  }
  // Absolute: node-postgres takes only a path that starts with / for a socket folder, and the host runs elsewhere.
  const dataDir = path.resolve(folder);
  makePrivateFolder(dataDir);
  if (!canShareFolder(dataDir)) {
    logger?.warn({ dataDir }, 'the data folder path is too long for a Unix socket; other Roster commands wait until this one ends');
    const { openPglite, pglitePool } = await inProcess();
    const opened = await openPgliteAlone(dataDir, openPglite);
    return createPoolDatabase({ kind: 'embedded', location: dataDir, pool: pglitePool(opened.pglite), onClose: opened.release, onAdmin });
  }
  // An idle connection whose host stopped is dropped, and the next query connects again (to a new host): nothing to report but the
  // reason, and a turn the host's end cut off says so itself. The error carries the client object, which is not for a log line.
  const pool = sharedSocketPool(dataDir, { max: 4, onError: (error) => logger?.debug({ reason: error.message }, 'an idle embedded database connection closed') });
  try {
    // Reached now, so that a folder that cannot be opened is reported by the command that opens it.
    (await pool.connect()).release();
  } catch (error) {
    await pool.end();
    throw error;
  }
  return createPoolDatabase({
    kind: 'embedded',
    location: dataDir,
    pool,
    onAdmin,
    // The host tightens the files once it leaves; this covers what was written meanwhile, for a copy made before then.
    onClose: async () => {
      try {
        tightenFolder(dataDir);
      } catch (error) {
        logger?.debug({ err: error }, 'could not tighten the embedded database folder');
      }
    },
  });
}

/** Open a folder that cannot be shared, waiting up to `hostWaitMs` for another process to let go of it. */
async function openPgliteAlone(
  dataDir: string,
  openPglite: (dataDir: string) => ReturnType<typeof import('./pglite-open.js').openPglite>,
): ReturnType<typeof import('./pglite-open.js').openPglite> {
  const deadline = Date.now() + hostWaitMs;
  for (;;) {
    try {
      return await openPglite(dataDir);
    } catch (error) {
      if (!(error instanceof DataDirInUseError)) throw error;
      if (Date.now() >= deadline) {
        const who = error.holder === undefined ? 'another process' : `process ${error.holder}`;
        throw new RosterError(
          'database_in_use',
          `The embedded database in ${dataDir} is in use by ${who}, and its path is too long to share it over a socket. Wait for that process to finish, or use a shorter ROSTER_DATA_DIR.`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** A server Postgres; refuses one without pgvector 0.8 or newer. */
export async function openServerDatabase(connectionString: string, logger?: Logger): Promise<Database> {
  const shown = redactUrl(connectionString);
  const probe = new pg.Client({ connectionString, connectionTimeoutMillis: 5000 });
  let isPglite = false;
  try {
    await probe.connect();
  } catch (error) {
    throw new RosterError(
      'database_unreachable',
      `DATABASE_URL is not reachable (${shown}): ${(error as Error).message}. Start Postgres, or unset DATABASE_URL to use the embedded database.`,
      { cause: error, retryable: true },
    );
  }
  try {
    const { rows } = await probe.query<{ version: string; installed: string | null; available: string | null }>(
      `select version() as version,
              (select extversion from pg_extension where extname = 'vector') as installed,
              (select default_version from pg_available_extensions where name = 'vector') as available`,
    );
    const row = rows[0];
    isPglite = row?.version.includes('PGlite') ?? false;
    const version = row?.installed ?? row?.available ?? null;
    if (version === null) {
      throw new RosterError(
        'pgvector_missing',
        `The Postgres at ${shown} has no pgvector extension. Install pgvector ${minimumPgvector} or newer on that server (the postgresql-NN-pgvector package, or the pgvector/pgvector image), then run roster migrate.`,
      );
    }
    if (compareVersions(version, minimumPgvector) < 0) {
      throw new RosterError(
        'pgvector_outdated',
        `The Postgres at ${shown} has pgvector ${version}; Roster needs ${minimumPgvector} or newer. Upgrade the pgvector package, then run ALTER EXTENSION vector UPDATE.`,
      );
    }
  } finally {
    await probe.end();
  }
  // A served embedded database is one session: more than one connection would interleave transactions.
  const pool = new pg.Pool({ connectionString, max: isPglite ? 1 : 10, connectionTimeoutMillis: 10_000 });
  pool.on('error', (error) => logger?.warn({ reason: error.message }, 'an idle database connection failed'));
  keepErrorsOfClientsInUse(pool);
  return createPoolDatabase({
    kind: 'server',
    location: shown,
    pool,
    onAdmin: (reason) => logger?.debug({ reason }, 'admin scope'),
  });
}

/** Compare dotted versions numerically: `0.10.0` is newer than `0.8.7`. */
export function compareVersions(left: string, right: string): number {
  const a = left.split('.').map((part) => Number.parseInt(part, 10) || 0);
  const b = right.split('.').map((part) => Number.parseInt(part, 10) || 0);
  for (let index = 0; index < Math.max(a.length, b.length); index += 1) {
    const difference = (a[index] ?? 0) - (b[index] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}
