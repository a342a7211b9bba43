import type { Logger } from '@roster/config';
import type { Database } from '@roster/db';
import { isJobName, payloadSchemas } from '@roster/contracts';
import type { QueueSet } from './queues.js';

export interface RelayReport {
  relayed: number;
  failed: number;
}

export interface RelayOptions {
  /** Rows read per statement (default 200). */
  batchSize?: number;
  /**
   * How long one hand-over may wait for Redis before the row is left pending
   * (default 5 s). A queue made while Redis was away waits for its first
   * connection; this bounds that wait, so a relay against a dead Redis
   * reports a failure instead of hanging.
   */
  timeoutMs?: number;
  logger?: Logger;
  /** Told when Redis did not take the jobs, instead of a log line per attempt (the worker says once that Redis is away). */
  onRedisError?: (error: Error) => void;
}

/** Settle with `promise`, or reject after `ms` (the promise itself is left to settle on its own). */
function withDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** A pending outbox row, as the relay reads it. */
interface PendingRow {
  id: string;
  queue: string;
  name: string;
  payload: unknown;
  attempts: number;
}

/**
 * Move pending outbox rows to BullMQ. The job id is the outbox row's id, so
 * a row relayed twice (a crash between the add and the mark) is one job.
 * While Redis is down nothing is lost: rows stay pending and are retried.
 *
 * Each batch is claimed with `for update skip locked` and handed over and
 * marked inside that same transaction, so relays running at once (a worker
 * per machine) each take rows no other relay holds: a row is relayed by one
 * of them. A relay that dies mid-batch leaves its rows pending (its
 * transaction rolls back), and the next relay takes them: at least once,
 * never lost. Redis is made ready before the claim, so that a transaction is
 * held only for the adds themselves, which fail at once while Redis is away
 * (the producers keep no offline queue).
 */
export async function relayOutbox(database: Database, queues: QueueSet, options: RelayOptions = {}): Promise<RelayReport> {
  const batchSize = options.batchSize ?? 200;
  const timeoutMs = options.timeoutMs ?? 5000;
  const unanswered = `Redis did not answer within ${timeoutMs} ms`;
  let relayed = 0;
  let failed = 0;
  for (;;) {
    // Waiting for a queue's first connection is the one wait the producer options do not bound: done before any row is locked.
    const needed = await database.adminScope('outbox relay: which queues pending jobs go to', async (tx) => {
      const { rows } = await tx.query<{ queue: string }>(
        `select distinct queue from (select queue from outbox where relayed_at is null order by created_at, id limit $1) as pending`,
        [batchSize],
      );
      return rows.map((row) => row.queue).filter(isJobName);
    });
    let notReady: Error | undefined;
    for (const name of needed) {
      try {
        await withDeadline(queues.queues[name].waitUntilReady(), timeoutMs, unanswered);
      } catch (error) {
        notReady = error as Error;
        break;
      }
    }
    const batch = await database.adminScope('outbox relay: claim pending jobs and hand them over', async (tx) => {
      const { rows } = await tx.query<PendingRow>(
        `select id, queue, name, payload, attempts from outbox where relayed_at is null order by created_at, id limit $1 for update skip locked`,
        [batchSize],
      );
      const done: string[] = [];
      const errors: Array<{ id: string; error: string }> = [];
      // A row no queue can take is set aside (marked, its reason kept), so that it never blocks the rows behind it.
      const invalid: Array<{ id: string; error: string }> = [];
      for (const row of rows) {
        if (!isJobName(row.queue) || !payloadSchemas[row.queue].safeParse(row.payload).success) {
          invalid.push({ id: row.id, error: `set aside: unknown job ${row.queue}/${row.name} or bad payload` });
          continue;
        }
        if (notReady !== undefined) {
          errors.push({ id: row.id, error: notReady.message });
          break;
        }
        try {
          await withDeadline(queues.queues[row.queue].add(row.name, row.payload, { jobId: row.id }), timeoutMs, unanswered);
          done.push(row.id);
        } catch (error) {
          errors.push({ id: row.id, error: (error as Error).message });
          break;
        }
      }
      if (done.length > 0) await tx.query('update outbox set relayed_at = now(), attempts = attempts + 1, last_error = null where id = any($1)', [done]);
      for (const error of errors) {
        await tx.query('update outbox set attempts = attempts + 1, last_error = $2 where id = $1', [error.id, error.error.slice(0, 500)]);
      }
      for (const row of invalid) {
        await tx.query('update outbox set relayed_at = now(), attempts = attempts + 1, last_error = $2 where id = $1', [row.id, row.error]);
      }
      return { claimed: rows.length, done, errors, invalid };
    });
    if (batch.invalid.length > 0) options.logger?.warn({ rows: batch.invalid.map((row) => row.id) }, 'outbox rows no queue can take were set aside');
    relayed += batch.done.length;
    failed += batch.errors.length;
    if (batch.errors.length > 0) {
      if (options.onRedisError !== undefined) options.onRedisError(new Error(batch.errors[0]!.error));
      else options.logger?.warn({ failed: batch.errors.length, error: batch.errors[0]?.error }, 'outbox relay could not hand jobs to Redis; they stay pending');
      break;
    }
    // Fewer than a batch: the rest is pending no more, or held by another relay, which goes on with it.
    if (batch.claimed < batchSize) break;
  }
  return { relayed, failed };
}

/** Relay on a timer until stopped; the pause grows while Redis is away. */
export function startRelayLoop(database: Database, queues: QueueSet, options: { intervalMs?: number; logger?: Logger; onRedisError?: (error: Error) => void } = {}) {
  const interval = options.intervalMs ?? 500;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let delay = interval;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = (async () => {
      try {
        const report = await relayOutbox(database, queues, {
          ...(options.logger === undefined ? {} : { logger: options.logger }),
          ...(options.onRedisError === undefined ? {} : { onRedisError: options.onRedisError }),
        });
        delay = report.failed > 0 ? Math.min(delay * 2, 30_000) : interval;
      } catch (error) {
        options.logger?.warn({ err: error }, 'outbox relay failed; retrying');
        delay = Math.min(delay * 2, 30_000);
      }
      if (!stopped) timer = setTimeout(tick, delay);
    })();
  };
  tick();
  return {
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
  };
}
