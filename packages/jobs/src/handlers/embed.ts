import type { JobDependencies, JobRun } from '../job-dependencies.js';
import type { JobPayload } from '../queues.js';

/** Embed: the vectors facts lack (memory.embedFacts). */
export async function embedJob(deps: JobDependencies, payload: JobPayload<'embed'>, run: JobRun): Promise<Record<string, unknown>> {
  const report = await deps.memory.embedFacts({
    ...(payload.factId === undefined ? {} : { factId: payload.factId }),
    ...(payload.agentId === undefined ? {} : { agentId: payload.agentId }),
    all: payload.all === true,
    onProgress: (progress) => run.progress(progress),
  });
  return { ...report };
}
