import type { Database } from '@roster/db';
import { contentHash } from '@roster/memory';

/**
 * Harvest: people's corrections and negative ratings, long enough to mean
 * something, become mirror cases (one per agent and text); each event is
 * harvested once.
 */
export async function harvestCorrections(database: Database, agentId?: string): Promise<{ events: number; casesCreated: number }> {
  return database.adminScope('harvest: corrections into mirror cases', async (tx) => {
    const { rows } = await tx.query<{ id: string; agent_id: string; person_id: string | null; message_id: string | null; text: string }>(
      `select id, agent_id, person_id, message_id, text from learning_events
       where harvested_at is null and actor_kind = 'person' and kind in ('correction', 'negative-rating')
         and length(text) >= 15 and ($1::uuid is null or agent_id = $1)
       order by created_at
       for update skip locked`,
      [agentId ?? null],
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
