import type { Logger } from '@roster/config';
import type { Agent, Directory, Engine } from '@roster/core';
import type { Database, Scope } from '@roster/db';
import { RosterError } from '@roster/errors';
import { contentHash, ensureEmbeddingModel, fade, isNearDuplicate, minhash, redactSecrets, writeEmbedding, type Memory } from '@roster/memory';
import { lessonTextProblem } from './lessons.js';
import { dueCases, replayCase, type MirrorRunResult } from './mirror.js';
import type { JobName, JobPayload } from './queues.js';

export interface JobDependencies {
  database: Database;
  memory: Memory;
  directory: Directory;
  engineFor: (agent: Agent) => Engine;
  /** The engine that judges mirror replays (a separate call from the agent's). */
  judgeFor: (agent: Agent) => Engine;
  logger?: Logger;
}

export interface JobRun {
  /** Long jobs report how far they are (BullMQ's job.updateProgress). */
  progress(value: number | Record<string, unknown>): Promise<void>;
}

type Handler<N extends JobName> = (deps: JobDependencies, payload: JobPayload<N>, run: JobRun) => Promise<Record<string, unknown>>;

async function agentsOf(deps: JobDependencies, agentId: string | undefined): Promise<Agent[]> {
  if (agentId !== undefined) {
    const agent = await deps.directory.agentById(agentId);
    // A purged agent has nothing left to learn from.
    return agent.status === 'purged' ? [] : [agent];
  }
  return deps.directory.listAgents();
}

/** The words of a learning event with its signal phrase taken off: "from now on, answer in Italian" → "Answer in Italian." */
export function lessonText(text: string): string {
  const stripped = text
    .trim()
    .replace(/^(that's wrong|that is wrong|you're wrong|you are wrong|no|actually|from now on|next time|la prossima volta|d'ora in poi|da ora in poi|hai sbagliato|sbagliato)[\s,:;.!-]*/iu, '')
    .trim();
  if (stripped === '') return '';
  const sentence = stripped.charAt(0).toUpperCase() + stripped.slice(1);
  return /[.!?]$/.test(sentence) ? sentence : `${sentence}.`;
}

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
    const agents = await agentsOf(deps, payload.agentId);
    for (const agent of agents) {
      for (const item of await dueCases(deps.database, agent.id, payload.limit ?? 5, new Date(), payload.rerunAfterHours ?? 20)) {
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
    };
  },

  async review(deps, payload) {
    let proposed = 0;
    const skipped: string[] = [];
    for (const agent of await agentsOf(deps, payload.agentId)) {
      const events = await deps.database.adminScope('review: read learning events', async (tx) => {
        const { rows } = await tx.query<{ id: string; person_id: string | null; message_id: string | null; text: string; kind: string }>(
          `select id, person_id, message_id, text, kind from learning_events
           where agent_id = $1 and actor_kind = 'person' and kind in ('correction', 'preference', 'negative-rating') and text <> ''
           order by created_at`,
          [agent.id],
        );
        return rows;
      });
      // Group the statements that say the same thing (near-duplicates of their words).
      const groups: Array<{ text: string; signature: number[]; evidence: typeof events; personId: string | null }> = [];
      for (const event of events) {
        const text = lessonText(event.text);
        if (text === '') continue;
        if (event.person_id !== null && (await deps.memory.isTombstoned({ agentId: agent.id, personId: event.person_id, audience: 'private' }, text))) continue;
        const signature = minhash(text);
        // Without a judge to paraphrase them, one person's words never become another person's prompt: groups stay per person.
        const group = groups.find((candidate) => candidate.personId === event.person_id && isNearDuplicate(candidate.signature, signature));
        if (group === undefined) groups.push({ text, signature, evidence: [event], personId: event.person_id });
        else {
          group.evidence.push(event);
          group.text = text;
        }
      }
      for (const group of groups.filter((candidate) => candidate.evidence.length >= 2)) {
        const text = redactSecrets(group.text).text;
        const outcome = await deps.database.adminScope('review: propose a lesson for approval', async (tx) => {
          const problem = await lessonTextProblem(tx, agent.id, text);
          if (problem !== null) return problem;
          const existing = await tx.query<{ text: string }>(`select text from approvals where agent_id = $1 and status in ('pending', 'rejected')`, [agent.id]);
          if (existing.rows.some((row) => contentHash(row.text) === contentHash(text) || isNearDuplicate(minhash(row.text), group.signature))) return 'already proposed';
          await tx.query(
            `insert into approvals (agent_id, person_id, kind, text, evidence, confidence, proposed_by_kind, proposed_by)
             values ($1, $2, 'lesson', $3, $4, $5, 'job', 'review')`,
            [agent.id, group.personId, text, JSON.stringify(group.evidence.map((event) => ({ eventId: event.id, messageId: event.message_id, kind: event.kind }))), Math.min(1, group.evidence.length / 5)],
          );
          await tx.query('update learning_events set reviewed_at = now() where id = any($1)', [group.evidence.map((event) => event.id)]);
          return null;
        });
        if (outcome === null) proposed += 1;
        else skipped.push(`${agent.name}: ${outcome}`);
      }
    }
    return { proposed, skipped };
  },

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
    const embedder = deps.memory.embedder;
    const batch = 64;
    let done = 0;
    // --all re-embeds every fact (after a model change); otherwise only those without a vector of this model.
    const rows = await deps.database.adminScope('embed: facts that need a vector', async (tx) => {
      const { rows } = await tx.query<{ id: string; agent_id: string; person_id: string | null; audience: 'private' | 'agent'; content: string }>(
        `select f.id, f.agent_id, f.person_id, f.audience, f.content from facts f
         where f.trust <> 'forgotten' and f.content <> ''
           and ($1::uuid is null or f.id = $1) and ($4::uuid is null or f.agent_id = $4)
           and ($2 or not exists (select 1 from fact_embeddings e where e.fact_id = f.id and e.model = $3))
         order by f.recorded_at`,
        [payload.factId ?? null, payload.all === true, embedder.model, payload.agentId ?? null],
      );
      return rows;
    });
    for (let start = 0; start < rows.length; start += batch) {
      const slice = rows.slice(start, start + batch);
      const vectors = await embedder.embed(slice.map((row) => row.content));
      if (embedder.dimensions > 0) await ensureEmbeddingModel(deps.database, embedder.model, embedder.dimensions);
      await deps.database.adminScope('embed: write vectors', async (tx) => {
        for (const [index, row] of slice.entries()) {
          await writeEmbedding(tx, { id: row.id, agentId: row.agent_id, personId: row.person_id, audience: row.audience }, embedder.model, vectors[index]!);
        }
      });
      done += slice.length;
      await run.progress({ embedded: done, total: rows.length });
    }
    return { embedded: done, model: embedder.model };
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
      await deps.database.adminScope('episodes: write a summary', async (tx) => {
        await tx.query(
          `insert into episodes (conversation_id, agent_id, person_id, summary, source_message_ids)
           values ($1, $2, $3, $4, $5)
           on conflict (conversation_id, agent_id) do update set summary = excluded.summary, source_message_ids = excluded.source_message_ids, stale = false, updated_at = now()`,
          [conversation.id, agent.id, conversation.personId, summary, sources],
        );
      });
      await mark(deps, conversation, 'summarized_until');
      written += 1;
    }
    return { episodes: written };
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
