import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { makePrivateFolder, redactUrl, tightenFolder, type Config, type Logger } from '@roster/config';
import { RosterError } from '@roster/errors';
import pg from 'pg';
import { createPoolDatabase, type Database } from './database.js';
import { acquireDataDirLock, DataDirInUseError } from './data-dir-lock.js';
import { canShareFolder, hostWaitMs, keepErrorsOfClientsInUse, sharedSocketPool } from './embedded-share.js';
import { pglitePool } from './pglite-connection.js';

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
 * Start PGlite with pgvector on a folder (or `memory://`). The folder is
 * locked for this process: PGlite is one process's database, and a second
 * writer would corrupt it.
 *
 * The folder is its owner's alone (700). PGlite gives the files it writes
 * mode 666 whatever the umask, so a umask cannot help; the folder's mode is
 * what keeps other accounts out while it runs, and its files are tightened
 * to 600 once it has opened and again once it has closed (the files it made
 * meanwhile), so that a copy of the folder made with its modes exposes
 * nothing either.
 */
export async function openPglite(dataDir: string, options: { image?: Blob } = {}): Promise<{ pglite: PGlite; release: () => Promise<void> }> {
  let unlock = async () => {};
  const tighten = () => {
    if (!dataDir.startsWith('memory://')) tightenFolder(dataDir);
  };
  try {
    if (!dataDir.startsWith('memory://')) {
      makePrivateFolder(dataDir);
      // On a full disk the lock file is the first thing that cannot be written: said as what to do, like the rest.
      unlock = acquireDataDirLock(dataDir);
    }
    const pglite = await PGlite.create(dataDir, { extensions: { vector }, ...(options.image === undefined ? {} : { loadDataDir: options.image }) });
    await pglite.exec(embeddedBootstrap);
    tighten();
    return {
      pglite,
      release: async () => {
        try {
          await pglite.close();
          tighten();
        } finally {
          await unlock();
        }
      },
    };
  } catch (error) {
    await unlock();
    // Another process holds the folder: its own error, which says whom to wait for.
    if (RosterError.isInstance(error) && error.code === 'database_in_use') throw error;
    throw new RosterError(
      'database_unavailable',
      `The embedded database in ${dataDir} could not be opened: ${(error as Error).message}. ${whatToDo(error)}`,
      { cause: error },
    );
  }
}

/**
 * What to do when the embedded database does not open. Never "start afresh":
 * a full disk or a permission looks like damage, and the data is still there.
 */
function whatToDo(error: unknown): string {
  const message = `${(error as { code?: unknown }).code ?? ''} ${(error as Error).message ?? ''}`;
  if (/ENOSPC|no space left/i.test(message)) return 'The disk is full: free some space and run this again. Nothing in the folder is lost.';
  if (/EACCES|EPERM|permission denied/i.test(message)) return 'This account may not use its files: run Roster as the account that owns the folder. Nothing in the folder is lost.';
  return 'Nothing in the folder was changed: keep it as it is (copy it before trying anything else), run roster doctor, and see "The embedded database does not open" in docs/operations.md.';
}

/**
 * The embedded database runs the same role model as a managed Postgres. Its
 * session starts as PGlite's superuser, which only does what an administrator
 * does for a managed one (create pgvector, create the owning role), then
 * becomes `roster_owner`: a role that owns the schema and may create roles,
 * but is not a superuser and cannot bypass row-level security. Everything
 * after, migrations included, runs as it or as the roles it creates.
 * Folders made before this model have their objects handed to it.
 *
 * Forgetting reaches the files too (the erase job). The bootstrap lets the
 * owner retire WAL segments (switch to a new one, checkpoint, list them) and
 * rewrite pg_statistic (pg_maintain: the planner's samples of rows a forget
 * emptied stay in its pages until then), and
 * turns WAL recycling off for the session: a recycled segment is an old one
 * renamed for reuse, its old records still inside until overwritten, so a
 * forgotten fact's words would outlive every checkpoint. Without recycling a
 * finished segment is deleted and a new one starts zero-filled.
 */
const embeddedBootstrap = `
create extension if not exists vector;
set wal_recycle = off;
do $bootstrap$
declare
  item record;
begin
  if not exists (select 1 from pg_roles where rolname = 'roster_owner') then
    create role roster_owner nologin createrole nobypassrls;
  end if;
  grant all on schema public to roster_owner;
  grant pg_checkpoint to roster_owner;
  grant pg_maintain to roster_owner;
  grant execute on function pg_switch_wal(), pg_ls_waldir() to roster_owner;
  for item in
    select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p', 'v', 'm', 'S') and pg_get_userbyid(c.relowner) = current_user
  loop
    execute format('alter table public.%I owner to roster_owner', item.relname);
  end loop;
  for item in
    select p.oid::regprocedure as signature from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'public' and pg_get_userbyid(p.proowner) = current_user
      and not exists (select 1 from pg_depend d where d.objid = p.oid and d.deptype = 'e')
  loop
    execute format('alter function %s owner to roster_owner', item.signature);
  end loop;
end
$bootstrap$;
set session authorization roster_owner;
`;

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
    const { pglite, release } = await openPglite(folder);
    return createPoolDatabase({ kind: 'embedded', location: folder, pool: pglitePool(pglite), onClose: release, onAdmin });
  }
  // Absolute: node-postgres takes only a path that starts with / for a socket folder, and the host runs elsewhere.
  const dataDir = path.resolve(folder);
  makePrivateFolder(dataDir);
  if (!canShareFolder(dataDir)) {
    logger?.warn({ dataDir }, 'the data folder path is too long for a Unix socket; other Roster commands wait until this one ends');
    const opened = await openPgliteAlone(dataDir);
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
async function openPgliteAlone(dataDir: string): Promise<Awaited<ReturnType<typeof openPglite>>> {
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
