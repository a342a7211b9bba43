import { contentHash } from '@roster/memory';
import type { JobDependencies, JobRun } from '../job-dependencies.js';
import type { JobPayload } from '../queues.js';

/** Harvest: people's corrections and negative ratings become mirror cases. */
export async function harvestJob(deps: JobDependencies, payload: JobPayload<'harvest'>, _run: JobRun): Promise<Record<string, unknown>> {
  // Corrections and negative ratings from people, long enough to mean something, become mirror cases.
  return deps.database.adminScope('harvest: corrections into mirror cases', async (tx) => {
    const { rows } = await tx.query<{ id: string; agent_id: string; person_id: string | null; message_id: string | null; text: string }>(
      `select id, agent_id, person_id, message_id, text from learning_events
       where harvested_at is null and actor_kind = 'person' and kind in ('correction', 'negative-rating')
         and length(text) >= 15 and ($1::uuid is null or agent_id = $1)
       order by created_at
       for update skip locked`,
      [payload.agentId ?? null],
    );
    let created = 0;
    for (const row of rows) {
      const inserted = await tx.query(
        `insert into mirror_cases (agent_id, person_id, text, text_hash, source_event_id, source_message_id)
         values ($1, $2, $3, $4, $5, $6) on conflict (agent_id, text_hash) do nothing`,
        [row.agent_id, row.person_id, row.text, contentHash(row.text), row.id, row.message_id],
      );
      created += inserted.rowCount ?? 0;
    }
    await tx.query('update learning_events set harvested_at = now() where id = any($1)', [rows.map((row) => row.id)]);
    return { events: rows.length, casesCreated: created };
  });
}
