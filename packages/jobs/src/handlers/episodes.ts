import type { Scope } from '@roster/db';
import { idleConversations, mark } from './idle-conversations.js';
import type { JobDependencies, JobRun } from '../job-dependencies.js';
import type { JobPayload } from '../queues.js';

/** Episodes: a summary of each idle conversation, rebuilt without forgotten words. */
export async function episodesJob(deps: JobDependencies, payload: JobPayload<'episodes'>, _run: JobRun): Promise<Record<string, unknown>> {
  const conversations = await idleConversations(deps, 'summarized_until', payload.idleMinutes, payload.conversationId, payload.agentId, true);
  let written = 0;
  for (const conversation of conversations) {
    const agent = await deps.directory.agentById(conversation.agentId);
    const scope: Scope | null = conversation.personId === null ? null : { agentId: agent.id, personId: conversation.personId, audience: 'private' };
    const lines: string[] = [];
    const sources: string[] = [];
    for (const message of conversation.allMessages) {
      if (message.content === '' || message.role === 'system') continue;
      // An automatic summary never brings back what was forgotten.
      if (scope !== null && (await deps.memory.isTombstoned(scope, message.content.slice(0, 4000)))) continue;
      const speaker = message.role === 'agent' ? agent.name : message.personName ?? 'someone';
      lines.push(`${speaker}: ${message.content.replace(/\s+/g, ' ').slice(0, 160)}`);
      sources.push(message.id);
    }
    const summary = lines.slice(-12).join('\n').slice(0, 4000);
    const wrote = await deps.database.adminScope('episodes: write a summary', async (tx) => {
      // The sources are locked, so a forget either finished before (and the summary is not written: the next run
      // rebuilds it without the words) or waits for this write and then marks the episode stale.
      const locked = await tx.query<{ forgotten: boolean }>('select forgotten_at is not null as forgotten from messages where id = any($1) for share', [sources]);
      if (locked.rows.some((row) => row.forgotten)) return false;
      await tx.query(
        `insert into episodes (conversation_id, agent_id, person_id, summary, source_message_ids)
         values ($1, $2, $3, $4, $5)
         on conflict (conversation_id, agent_id) do update set summary = excluded.summary, source_message_ids = excluded.source_message_ids, stale = false, updated_at = now()`,
        [conversation.id, agent.id, conversation.personId, summary, sources],
      );
      return true;
    });
    if (!wrote) continue;
    await mark(deps, conversation, 'summarized_until');
    written += 1;
  }
  return { episodes: written };
}
