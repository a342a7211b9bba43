import type { Scope } from '@roster/db';
import { RosterError } from '@roster/errors';
import { contentHash, fade } from '@roster/memory';
import { eraseForgotten } from './erase.js';
import { canJudge, dueCases, noJudgeNotice, replayCase, type MirrorRunResult } from './mirror.js';
import { reviewLessons } from './review.js';
import { agentsOf, type JobDependencies, type JobRun } from './job-dependencies.js';
import type { JobName, JobPayload } from './queues.js';

export type { JobDependencies, JobRun } from './job-dependencies.js';

type Handler<N extends JobName> = (deps: JobDependencies, payload: JobPayload<N>, run: JobRun) => Promise<Record<string, unknown>>;

const idle = (minutes: number | undefined) => `${Math.max(0, minutes ?? 30)} minutes`;

export const handlers: { [N in JobName]: Handler<N> } = {
  async fade(deps, payload, run) {
    const report = await fade(deps.database, deps.memory.audit, {
      ...(payload.days === undefined ? {} : { days: payload.days }),
      ...(payload.batchSize === undefined ? {} : { batchSize: payload.batchSize }),
      onProgress: (faded) => run.progress({ faded }),
    });
    return { ...report };
  },

  async harvest(deps, payload) {
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
  },

  async mirror(deps, payload, run) {
    const results: Array<Omit<MirrorRunResult, 'reason'> & { agent: string }> = [];
    const unjudged: Array<{ agent: string; waiting: number }> = [];
    const agents = await agentsOf(deps, payload.agentId);
    for (const agent of agents) {
      const due = await dueCases(deps.database, agent.id, payload.limit ?? 5, new Date(), payload.rerunAfterHours ?? 20);
      if (!canJudge(deps.judgeFor(agent))) {
        // Said once in the result (and by the report and doctor), not recorded as an error run every night.
        if (due.length > 0) unjudged.push({ agent: agent.name, waiting: due.length });
        continue;
      }
      for (const item of due) {
        // A job's result lands in Redis: ids, verdicts and counts, never the judge's reason or the answer (those stay in mirror_runs, which forget reaches).
        const { reason: _reason, ...replay } = await replayCase(deps, agent, item);
        results.push({ agent: agent.name, ...replay });
        await run.progress({ replayed: results.length });
      }
    }
    return {
      replayed: results.length,
      passed: results.filter((result) => result.verdict === 'pass').length,
      failed: results.filter((result) => result.verdict === 'fail').length,
      errors: results.filter((result) => result.verdict === 'error').length,
      results,
      ...(unjudged.length > 0 ? { notice: noJudgeNotice, unjudged } : {}),
    };
  },

  review: reviewLessons,

  async extract(deps, payload) {
    let extracted = 0;
    let refused = 0;
    const conversations = await idleConversations(deps, 'extracted_until', payload.idleMinutes, payload.conversationId, payload.agentId);
    const notes: string[] = [];
    for (const conversation of conversations) {
      const agent = await deps.directory.agentById(conversation.agentId);
      const engine = deps.engineFor(agent);
      const messages = conversation.messages.filter((message) => message.role === 'person' && message.personId === conversation.personId);
      if (engine.id === 'offline') {
        // The offline engine is not a language model: it extracts nothing, and says so.
        notes.push(`${agent.name}: the offline engine extracts nothing`);
      } else if (messages.length > 0 && conversation.personId !== null) {
        const answer = await engine.run({
          system: 'You extract facts a person stated about themselves. Answer only with a JSON array of short sentences, each one fact in the person’s words; [] when there are none.',
          memory: '',
          history: [],
          message: messages.map((message) => `- ${message.content}`).join('\n'),
          tools: [],
        });
        const facts = parseStringArray(answer.text);
        const scope: Scope = { agentId: agent.id, personId: conversation.personId, audience: 'private' };
        for (const content of facts) {
          try {
            const { created } = await deps.memory.remember(scope, {
              content,
              provenance: { actor: { kind: 'job', id: 'extract' }, sourceMessageIds: messages.map((message) => message.id), tool: 'extract' },
            });
            if (created) extracted += 1;
          } catch (error) {
            if (RosterError.isInstance(error) && ['tombstoned', 'rejected_statement', 'memory_input_invalid'].includes(error.code)) refused += 1;
            else throw error;
          }
        }
      }
      await mark(deps, conversation, 'extracted_until');
    }
    return { conversations: conversations.length, extracted, refused, notes };
  },

  async embed(deps, payload, run) {
    const report = await deps.memory.embedFacts({
      ...(payload.factId === undefined ? {} : { factId: payload.factId }),
      ...(payload.agentId === undefined ? {} : { agentId: payload.agentId }),
      all: payload.all === true,
      onProgress: (progress) => run.progress(progress),
    });
    return { ...report };
  },

  async episodes(deps, payload) {
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
  },

  async erase(deps, payload, run) {
    const report = await eraseForgotten(deps.database, {
      ...(payload.tables === undefined ? {} : { tables: payload.tables }),
      ...(deps.logger === undefined ? {} : { logger: deps.logger }),
      onProgress: (progress) => run.progress(progress),
    });
    return { ...report };
  },
};

function parseStringArray(text: string): string[] {
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
async function idleConversations(
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

async function mark(deps: JobDependencies, conversation: IdleConversation, column: 'extracted_until' | 'summarized_until'): Promise<void> {
  await deps.database.adminScope('jobs: mark a conversation as read', (tx) =>
    tx.query(
      `insert into conversation_marks (conversation_id, agent_id, ${column}) values ($1, $2, $3)
       on conflict (conversation_id, agent_id) do update set ${column} = excluded.${column}`,
      [conversation.id, conversation.agentId, conversation.lastMessageAt],
    ),
  );
}
