import { harvestCorrections } from '@roster/learning';
import type { JobDependencies, JobRun } from '../job-dependencies.js';
import type { JobPayload } from '../queues.js';

/** Harvest: people's corrections and negative ratings become mirror cases. */
export async function harvestJob(deps: JobDependencies, payload: JobPayload<'harvest'>, _run: JobRun): Promise<Record<string, unknown>> {
  return harvestCorrections(deps.database, payload.agentId);
}
