import { fade } from '@roster/memory';
import type { JobDependencies, JobRun } from '../job-dependencies.js';
import type { JobPayload } from '../queues.js';

/** Fade: memories unused for a long time lose trust, in batches (memory's fade). */
export async function fadeJob(deps: JobDependencies, payload: JobPayload<'fade'>, run: JobRun): Promise<Record<string, unknown>> {
  const report = await fade(deps.database, deps.memory.audit, {
    ...(payload.days === undefined ? {} : { days: payload.days }),
    ...(payload.batchSize === undefined ? {} : { batchSize: payload.batchSize }),
    onProgress: (faded) => run.progress({ faded }),
  });
  return { ...report };
}
