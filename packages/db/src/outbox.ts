import { isJobName, payloadSchemas, type JobName, type JobPayload } from '@roster/contracts';
import { RosterError } from '@roster/errors';
import type { Database, Transaction } from './database.js';

/** A job of one queue, as the outbox keeps it until the relay hands it to that queue. */
export interface QueuedJob<N extends JobName> {
  queue: N;
  /** The job's name within its queue (what Bull Board shows): `extract-conversation`, `embed-fact`. */
  name: string;
  payload: JobPayload<N>;
  /** A second job with the same key is not written (a redelivered message queues its jobs once). */
  dedupeKey: string;
  /** Whose job it is; row-level security lets a scope write only its own agent's and person's. */
  agentId: string | null;
  personId: string | null;
}

/**
 * An erase of the files: the tables a forget or a purge reached. Every
 * erase pending collects into one row (the SQL function
 * `roster_queue_erase`, which also keeps out names that are not tables).
 */
export interface EraseJob {
  queue: 'erase';
  payload: { tables: string[] };
}

/** Any job the outbox takes. */
export type OutboxJob = { [N in Exclude<JobName, 'erase'>]: QueuedJob<N> }[Exclude<JobName, 'erase'>] | EraseJob;

/**
 * Write a job in the transaction of the change that needs it: the job
 * exists if and only if the change commits, and the relay hands it to its
 * queue later. The only way TypeScript writes the outbox; its payload is
 * checked against the queue's own schema first, and a job that no queue
 * could take is refused with nothing written.
 */
export async function enqueue(tx: Transaction, job: OutboxJob): Promise<void> {
  if (job.queue === 'erase') {
    checked(job);
    await tx.query('select roster_queue_erase($1)', [job.payload.tables]);
    return;
  }
  await tx.query(outboxInsertSql('$1'), [outboxRows([job])]);
}

/** A job's payload checked against its queue's schema: a job that no queue could take is refused. */
function checked(job: OutboxJob): unknown {
  const queue: string = job.queue;
  if (!isJobName(queue)) throw new RosterError('job_unknown', `No queue is named ${JSON.stringify(queue)}.`);
  const parsed = payloadSchemas[queue].safeParse(job.payload);
  if (!parsed.success) throw new RosterError('job_payload_invalid', `The ${queue} job's payload does not match its queue: ${parsed.error.issues[0]?.message ?? 'invalid'}.`);
  return parsed.data;
}

/**
 * Jobs (not erases) as the JSON array `outboxInsertSql` reads, each payload
 * checked against its queue's schema first: for a statement that writes a
 * change and its jobs at once (a turn's reply and its follow-ups).
 */
export function outboxRows(jobs: ReadonlyArray<Exclude<OutboxJob, EraseJob>>): string {
  return JSON.stringify(jobs.map((job) => ({ queue: job.queue, name: job.name, payload: checked(job), dedupeKey: job.dedupeKey, agentId: job.agentId, personId: job.personId })));
}

/**
 * The outbox insert of the jobs `outboxRows` made, given in `parameter`,
 * where `condition` holds (in a statement that writes the change they
 * follow); a job already queued (its dedupe key) is not queued twice. The
 * only SQL that inserts outbox rows from TypeScript.
 */
export function outboxInsertSql(parameter: string, condition = 'true'): string {
  return `insert into outbox (queue, name, payload, dedupe_key, agent_id, person_id)
    select j."queue", j."name", j."payload", j."dedupeKey", j."agentId", j."personId"
    from jsonb_to_recordset(${parameter}::jsonb) as j("queue" text, "name" text, "payload" jsonb, "dedupeKey" text, "agentId" uuid, "personId" uuid)
    where ${condition}
    on conflict (dedupe_key) do nothing`;
}

/**
 * A write that rides in the statement of the change it belongs with, as one
 * of that statement's CTEs: `sql` writes from one JSON parameter, which the
 * carrying statement names, and only where `condition` holds. It returns rows
 * (an INSERT … RETURNING, or a SELECT of a function that writes), and the
 * carrying statement reads them all, so that it runs exactly once. The
 * package that owns the table makes it; the carrying statement runs it unchanged.
 */
export interface WriteAlong {
  sql(parameter: string, condition: string): string;
  value: string;
}

/** The outbox's backlog in one queue: rows not yet handed to Redis, and the age of the oldest. */
export interface OutboxBacklog {
  queue: string;
  pending: number;
  oldestSeconds: number;
}

/** The rows still pending per queue, read through the admin path (for metrics: counts and ages, never a payload). */
export async function outboxBacklog(database: Database): Promise<OutboxBacklog[]> {
  return database.adminScope('metrics: the outbox backlog', async (tx) => {
    const { rows } = await tx.query<{ queue: string; pending: string | number; oldest_seconds: string | number }>(
      `select queue, count(*) as pending, extract(epoch from now() - min(created_at)) as oldest_seconds
       from outbox where relayed_at is null group by queue order by queue`,
    );
    return rows.map((row) => ({ queue: row.queue, pending: Number(row.pending), oldestSeconds: Math.max(0, Number(row.oldest_seconds)) }));
  });
}
