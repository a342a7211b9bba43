import type { JobDependencies } from '../job-dependencies.js';

/** How long a conversation is quiet before extraction and episodes read it. */
const idle = (minutes: number | undefined) => `${Math.max(0, minutes ?? 30)} minutes`;

/** A model's answer as a JSON array of non-empty strings (at most 50), or none. */
export function parseStringArray(text: string): string[] {
  try {
    const parsed = JSON.parse(text.trim()) as unknown;
    return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === 'string' && item.trim() !== '').slice(0, 50) : [];
  } catch {
    return [];
  }
}

interface IdleConversation {
  id: string;
  agentId: string;
  personId: string | null;
  lastMessageAt: Date;
  /** Messages since the mark (extraction) . */
  messages: Array<{ id: string; role: string; content: string; personId: string | null }>;
  /** Every message not forgotten (episodes are rebuilt whole). */
  allMessages: Array<{ id: string; role: string; content: string; personName: string | null }>;
}

/**
 * Conversations idle for `minutes` with messages newer than the mark, per
 * agent that took part; for episodes also those whose summary went stale.
 */
export async function idleConversations(
  deps: JobDependencies,
  column: 'extracted_until' | 'summarized_until',
  minutes: number | undefined,
  conversationId: string | undefined,
  agentId: string | undefined,
  includeStale = false,
): Promise<IdleConversation[]> {
  return deps.database.adminScope(`${column === 'extracted_until' ? 'extract' : 'episodes'}: find idle conversations`, async (tx) => {
    const { rows } = await tx.query<{ conversation_id: string; agent_id: string; person_id: string | null; last_message_at: Date; mark: Date | null }>(
      `select c.id as conversation_id, a.agent_id, c.person_id, c.last_message_at, m.${column} as mark
       from conversations c
       join (select distinct conversation_id, agent_id from messages where agent_id is not null) a on a.conversation_id = c.id
       join agents on agents.id = a.agent_id and agents.status <> 'purged'
       left join conversation_marks m on m.conversation_id = c.id and m.agent_id = a.agent_id
       where ($1::uuid is null or c.id = $1) and ($2::uuid is null or a.agent_id = $2)
         and (
           (c.last_message_at <= now() - $3::interval and (m.${column} is null or m.${column} < c.last_message_at))
           or ($4 and exists (select 1 from episodes e where e.conversation_id = c.id and e.agent_id = a.agent_id and e.stale))
         )`,
      [conversationId ?? null, agentId ?? null, idle(minutes), includeStale],
    );
    const result: IdleConversation[] = [];
    for (const row of rows) {
      const messages = await tx.query<{ id: string; role: string; content: string; person_id: string | null; person_name: string | null; created_at: Date }>(
        `select m.id, m.role, m.content, m.person_id, p.name as person_name, m.created_at from messages m left join people p on p.id = m.person_id
         where m.conversation_id = $1 and m.forgotten_at is null and (m.agent_id is null or m.agent_id = $2)
         order by m.created_at, m.id`,
        [row.conversation_id, row.agent_id],
      );
      result.push({
        id: row.conversation_id,
        agentId: row.agent_id,
        personId: row.person_id,
        lastMessageAt: row.last_message_at,
        messages: messages.rows.filter((message) => row.mark === null || message.created_at > row.mark).map((message) => ({ id: message.id, role: message.role, content: message.content, personId: message.person_id })),
        allMessages: messages.rows.map((message) => ({ id: message.id, role: message.role, content: message.content, personName: message.person_name })),
      });
    }
    return result;
  });
}

export async function mark(deps: JobDependencies, conversation: IdleConversation, column: 'extracted_until' | 'summarized_until'): Promise<void> {
  await deps.database.adminScope('jobs: mark a conversation as read', (tx) =>
    tx.query(
      `insert into conversation_marks (conversation_id, agent_id, ${column}) values ($1, $2, $3)
       on conflict (conversation_id, agent_id) do update set ${column} = excluded.${column}`,
      [conversation.id, conversation.agentId, conversation.lastMessageAt],
    ),
  );
}
