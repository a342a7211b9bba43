import type { JobDependencies, JobRun } from '../job-dependencies.js';
import type { JobPayload } from '../queues.js';

/**
 * Vacuum: the embedded database runs no autovacuum, so dead rows (every
 * update and delete leaves one) would pile up and its files grow for ever.
 * This reclaims them and refreshes the planner's statistics, table by table,
 * on a schedule (ROSTER_VACUUM_MINUTES), then checkpoints: the embedded
 * database has no checkpointer either, so without one its write-ahead log
 * grows until max_wal_size (1 GB) forces one, and the folder carries it all
 * the while. After a checkpoint the segments before it are recycled (up to
 * min_wal_size) or removed. A server Postgres vacuums and checkpoints itself.
 */
export async function vacuumJob(deps: JobDependencies, _payload: JobPayload<'vacuum'>, run: JobRun): Promise<Record<string, unknown>> {
  if (deps.database.kind !== 'embedded') return { database: 'server', tables: 0, skipped: 'a server Postgres runs autovacuum' };
  return deps.database.ownerSession('vacuum: reclaim dead rows on the embedded database', async (session) => {
    const { rows } = await session.query<{ name: string }>(
      `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = 'public' and c.relkind = 'r' and pg_get_userbyid(c.relowner) = current_user order by 1`,
    );
    for (const [index, { name }] of rows.entries()) {
      // The names come from the catalog, never from a caller.
      await session.query(`vacuum (analyze) public."${name.replaceAll('"', '""')}"`);
      await run.progress({ tables: index + 1, of: rows.length });
    }
    await session.query('checkpoint');
    return { database: 'embedded', tables: rows.length, checkpoint: true };
  });
}
