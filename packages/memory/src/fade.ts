import type { Database } from '@roster/db';
import type { AuditLog } from './audit.js';

/** Categories that never fade, however long unused. */
export const protectedCategories = ['identity', 'safety', 'pinned', 'preference'] as const;

/**
 * One batch of fade: the oldest eligible facts (recorded and unused before
 * $1, used fewer than $2 times, not in the categories $3, still believed: a
 * belief closed in record time is history and stays as it was), at most $4,
 * made `faded`. Exported so that the jobs benchmark explains this very statement.
 */
export const fadeBatchStatement = `with chosen as (
  select id from facts
  where trust in ('active', 'candidate') and recorded_at < $1 and superseded_at is null
    and (last_used_at is null or last_used_at < $1) and uses < $2
    and category <> all($3)
  order by recorded_at
  limit $4
  for update skip locked
)
update facts f set trust = 'faded'
from chosen c
where f.id = c.id
returning f.id, f.agent_id, f.person_id`;

export interface FadeOptions {
  /** Facts recorded and unused for this many days fade (default 45). */
  days?: number;
  /** Facts used at least this many times stay (default 2). */
  minUses?: number;
  /** How many facts one transaction fades (default 500). */
  batchSize?: number;
  /** The moment "now" is, for tests and replays. */
  now?: Date;
  /** Told after each batch: how many have faded so far. */
  onProgress?: (faded: number) => void | Promise<void>;
}

export interface FadeReport {
  faded: number;
  agents: number;
  batches: number;
}

/**
 * Fade every agent's unused memory: `active` or `candidate` facts older than
 * `days`, unused for `days`, used fewer than `minUses` times, not in a
 * protected category, become `faded` (restorable), one event each. It reads
 * every agent's memory, so it runs in a named admin scope, batch by batch.
 */
export async function fade(database: Database, audit: AuditLog, options: FadeOptions = {}): Promise<FadeReport> {
  const days = options.days ?? 45;
  const minUses = options.minUses ?? 2;
  const batchSize = Math.max(1, options.batchSize ?? 500);
  const now = options.now ?? new Date();
  const cutoff = new Date(now.getTime() - days * 86_400_000);
  const agents = new Set<string>();
  let faded = 0;
  let batches = 0;
  for (;;) {
    const count = await database.adminScope('fade: every agent’s unused memory', async (tx) => {
      const { rows } = await tx.query<{ id: string; agent_id: string; person_id: string | null }>(
        fadeBatchStatement,
        [cutoff, minUses, [...protectedCategories], batchSize],
      );
      for (const row of rows) agents.add(row.agent_id);
      // One event per fact, appended with two statements per batch.
      await audit.appendMany(
        tx,
        rows.map((row) => ({
          agentId: row.agent_id,
          personId: row.person_id,
          actor: { kind: 'job' as const, id: 'fade' },
          action: 'fade',
          targetKind: 'fact' as const,
          targetId: row.id,
          detail: { unused_days: days, min_uses: minUses },
        })),
      );
      return rows.length;
    });
    if (count === 0) break;
    faded += count;
    batches += 1;
    await options.onProgress?.(faded);
    if (count < batchSize) break;
  }
  return { faded, agents: agents.size, batches };
}
