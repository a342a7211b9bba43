import { z } from 'zod';

/**
 * Every job Roster runs, one queue each, so that Bull Board shows them apart.
 * The outbox names its rows' queues with these, and the queues take them:
 * a job's kind and its payload are the same here, in the outbox and in Redis.
 */
export const jobNames = ['fade', 'harvest', 'mirror', 'review', 'extract', 'embed', 'episodes', 'erase', 'vacuum', 'backup'] as const;
export type JobName = (typeof jobNames)[number];

const agentId = z.string().uuid();

/** The payload of each job. Payloads carry ids and options, never memory content. */
export const payloadSchemas = {
  fade: z.object({ days: z.number().int().min(1).max(3650).optional(), batchSize: z.number().int().min(1).max(10_000).optional() }),
  harvest: z.object({ agentId: agentId.optional() }),
  mirror: z.object({
    agentId: agentId.optional(),
    limit: z.number().int().min(1).max(100).optional(),
    /** A case replayed less than this long ago waits (default 20 hours: once a night, however often the job runs). */
    rerunAfterHours: z.number().min(0).max(24 * 31).optional(),
  }),
  review: z.object({ agentId: agentId.optional() }),
  extract: z.object({
    agentId: agentId.optional(),
    conversationId: z.string().uuid().optional(),
    personId: z.string().uuid().optional(),
    idleMinutes: z.number().min(0).max(10_080).optional(),
  }),
  embed: z.object({ factId: z.string().uuid().optional(), model: z.string().optional(), all: z.boolean().optional(), agentId: agentId.optional() }),
  episodes: z.object({ agentId: agentId.optional(), conversationId: z.string().uuid().optional(), idleMinutes: z.number().min(0).max(10_080).optional() }),
  erase: z.object({
    /** The tables forgets reached (queued by a forget); without them (a run by hand), every table that holds people's words. */
    tables: z.array(z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/)).max(100).optional(),
  }),
  vacuum: z.object({}),
  backup: z.object({}),
} satisfies Record<JobName, z.ZodType>;

export type JobPayload<N extends JobName> = z.output<(typeof payloadSchemas)[N]>;

/** Whether a name is one of the jobs (an outbox row's `queue`, a name typed at the command line). */
export function isJobName(name: string): name is JobName {
  return (jobNames as readonly string[]).includes(name);
}
