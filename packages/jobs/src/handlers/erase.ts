import { eraseForgotten } from '../erase.js';
import type { JobDependencies, JobRun } from '../job-dependencies.js';
import type { JobPayload } from '../queues.js';

/** Erase: take forgotten words off the disk (VACUUM FULL and the WAL on the embedded database). */
export async function eraseJob(deps: JobDependencies, payload: JobPayload<'erase'>, run: JobRun): Promise<Record<string, unknown>> {
  const report = await eraseForgotten(deps.database, {
    ...(payload.tables === undefined ? {} : { tables: payload.tables }),
    ...(deps.logger === undefined ? {} : { logger: deps.logger }),
    onProgress: (progress) => run.progress(progress),
  });
  return { ...report };
}
