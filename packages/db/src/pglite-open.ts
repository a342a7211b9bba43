import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { makePrivateFolder, tightenFolder } from '@roster/config/files';
import { RosterError } from '@roster/errors';
import { acquireDataDirLock } from './data-dir-lock.js';

// Opening PGlite itself, on light imports: the embedded host (embedded-host.ts) starts with this alone, so that a
// command that finds no host waits for PGlite and not for the rest of the package.

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
