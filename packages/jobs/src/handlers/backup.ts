import { RosterError } from '@roster/errors';
import type { JobDependencies, JobRun } from '../job-dependencies.js';
import type { JobPayload } from '../queues.js';

/**
 * The nightly backup: a sealed copy of the database into ROSTER_BACKUP_DIR,
 * the oldest beyond ROSTER_BACKUP_KEEP removed. Its result names the file and
 * its size, never anything in it.
 */
export async function backupJob(deps: JobDependencies, _payload: JobPayload<'backup'>, _run: JobRun): Promise<Record<string, unknown>> {
  if (deps.backup === undefined) throw new RosterError('backup_off', 'Backups are off: set ROSTER_BACKUP_DIR on the worker to a folder for them.');
  return { ...(await deps.backup()) };
}
