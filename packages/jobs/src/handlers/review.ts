import { reviewAgent } from '@roster/learning';
import { agentsOf, type JobDependencies, type JobRun } from '../job-dependencies.js';
import type { JobPayload } from '../queues.js';

/** Review: each agent's repeated statements become lessons proposed for a person to approve (`@roster/learning`'s `reviewAgent`). */
export async function reviewJob(deps: JobDependencies, payload: JobPayload<'review'>, _run: JobRun): Promise<Record<string, unknown>> {
  let proposed = 0;
  const skipped: string[] = [];
  for (const agent of await agentsOf(deps, payload.agentId)) {
    const outcome = await reviewAgent({ database: deps.database, memory: deps.memory, agent, judge: deps.judgeFor(agent) });
    proposed += outcome.proposed;
    skipped.push(...outcome.skipped);
  }
  return { proposed, skipped };
}
