import type { Job } from 'bullmq';
import type { QueueSet } from './queues.js';

/** The states a job can be removed in; an active job is a worker's, and finds nothing of the person when it reads. */
const removable = ['waiting', 'delayed', 'prioritized', 'paused', 'waiting-children', 'completed', 'failed'] as const;

/**
 * Remove from Redis every job whose data names this person (payloads carry
 * ids, never words: this takes out the last tie between a job and an erased
 * person). Returns how many went, by queue name.
 */
export async function removePersonJobs(queues: QueueSet, personId: string): Promise<Record<string, number>> {
  const removed: Record<string, number> = {};
  for (const [name, queue] of Object.entries(queues.queues)) {
    const jobs = (await queue.getJobs([...removable])) as Array<Job | undefined>;
    for (const job of jobs) {
      if (job === undefined || !JSON.stringify(job.data ?? {}).includes(personId)) continue;
      // A job a worker took meanwhile cannot be removed; it finds nothing of the person when it reads.
      if (await job.remove().then(() => true, () => false)) removed[name] = (removed[name] ?? 0) + 1;
    }
  }
  return removed;
}
