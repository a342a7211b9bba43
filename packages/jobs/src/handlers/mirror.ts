import { memoryBlock, systemPrefix, type Agent } from '@roster/core';
import { canJudge, dueCases, noJudgeNotice, replayCase, type MirrorOptions, type MirrorRunResult } from '@roster/learning';
import { agentsOf, type JobDependencies, type JobRun } from '../job-dependencies.js';
import type { JobPayload } from '../queues.js';

/** The prompt a replay is answered with: the agent's own, as its turns build it (no memory tools), in a direct chat. */
const mirrorPrompt: MirrorOptions<Agent>['prompt'] = (agent, { lessons, person, facts }) => ({
  system: systemPrefix(agent, lessons, false),
  memory: memoryBlock({ person, channel: 'mirror', kind: 'dm', facts }),
});

/** Mirror: replay due cases with each agent's own lessons and have a judge decide; without a judge, say so once. */
export async function mirrorJob(deps: JobDependencies, payload: JobPayload<'mirror'>, run: JobRun): Promise<Record<string, unknown>> {
  const results: Array<Omit<MirrorRunResult, 'reason'> & { agent: string }> = [];
  const unjudged: Array<{ agent: string; waiting: number }> = [];
  const agents = await agentsOf(deps, payload.agentId);
  for (const agent of agents) {
    const due = await dueCases(deps.database, agent.id, payload.limit ?? 5, new Date(), payload.rerunAfterHours ?? 20);
    if (!canJudge(deps.judgeFor(agent))) {
      // Said once in the result (and by the report and doctor), not recorded as an error run every night.
      if (due.length > 0) unjudged.push({ agent: agent.name, waiting: due.length });
      continue;
    }
    for (const item of due) {
      // A job's result lands in Redis: ids, verdicts and counts, never the judge's reason or the answer (those stay in mirror_runs, which forget reaches).
      const { reason: _reason, ...replay } = await replayCase({ ...deps, prompt: mirrorPrompt }, agent, item);
      results.push({ agent: agent.name, ...replay });
      await run.progress({ replayed: results.length });
    }
  }
  return {
    replayed: results.length,
    passed: results.filter((result) => result.verdict === 'pass').length,
    failed: results.filter((result) => result.verdict === 'fail').length,
    errors: results.filter((result) => result.verdict === 'error').length,
    results,
    ...(unjudged.length > 0 ? { notice: noJudgeNotice, unjudged } : {}),
  };
}
