import type { Logger } from '@roster/config';
import type { Database } from '@roster/db';
import { isJobName, payloadSchemas, type QueueSet } from './queues.js';

export interface RelayReport {
  relayed: number;
  failed: number;
}

/**
 * Move pending outbox rows to BullMQ. The job id is the outbox row's id, so
 * a row relayed twice (a crash between the add and the mark) is one job.
 * While Redis is down nothing is lost: rows stay pending and are retried.
 */
export async function relayOutbox(database: Database, queues: QueueSet, options: { batchSize?: number; logger?: Logger } = {}): Promise<RelayReport> {
  const batchSize = options.batchSize ?? 200;
  let relayed = 0;
  let failed = 0;
  for (;;) {
    const rows = await database.adminScope('outbox relay: read pending jobs', async (tx) => {
      const { rows } = await tx.query<{ id: string; queue: string; name: string; payload: unknown; attempts: number }>(
        `select id, queue, name, payload, attempts from outbox where relayed_at is null order by created_at, id limit $1`,
        [batchSize],
      );
      return rows;
    });
    if (rows.length === 0) break;
    const done: string[] = [];
    const errors: Array<{ id: string; error: string }> = [];
    for (const row of rows) {
      if (!isJobName(row.queue) || !payloadSchemas[row.queue].safeParse(row.payload).success) {
        errors.push({ id: row.id, error: `unknown job ${row.queue}/${row.name} or bad payload` });
        continue;
      }
      try {
        await queues.queues[row.queue].add(row.name, row.payload, { jobId: row.id });
        done.push(row.id);
      } catch (error) {
        errors.push({ id: row.id, error: (error as Error).message });
        break;
      }
    }
    await database.adminScope('outbox relay: mark jobs', async (tx) => {
      if (done.length > 0) await tx.query('update outbox set relayed_at = now(), attempts = attempts + 1, last_error = null where id = any($1)', [done]);
      for (const error of errors) {
        await tx.query('update outbox set attempts = attempts + 1, last_error = $2 where id = $1', [error.id, error.error.slice(0, 500)]);
      }
    });
    relayed += done.length;
    failed += errors.length;
    if (errors.length > 0) {
      options.logger?.warn({ failed: errors.length, error: errors[0]?.error }, 'outbox relay could not hand jobs to Redis; they stay pending');
      break;
    }
    if (rows.length < batchSize) break;
  }
  return { relayed, failed };
}

/** Relay on a timer until stopped; the pause grows while Redis is away. */
export function startRelayLoop(database: Database, queues: QueueSet, options: { intervalMs?: number; logger?: Logger } = {}) {
  const interval = options.intervalMs ?? 500;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let delay = interval;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = (async () => {
      try {
        const report = await relayOutbox(database, queues, options.logger === undefined ? {} : { logger: options.logger });
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
