import type { SearchResult } from '@roster/memory';
import type { Agent, Person } from './directory.js';
import type { EngineMessage } from '@roster/contracts';

/** Fixed guidance on the memory tools; part of the cacheable prefix. */
const toolGuidance = `How you use memory:
- remember: store what the person tells you about themselves, in their words.
- recall: look up what you know before answering questions about the person or the past.
- correct: when the person says something you know was wrong, replace it; update: when it changed.
- forget: when the person asks you to forget something, find it and forget it.
- Before forget, correct or update, find the fact with recall and matching: true, and pass the person's words as request. If nothing matches, say you found nothing like it; if several are marked close, ask which one and change nothing.
- feedback: record the person's rating of your answer. propose_lesson: suggest a rule for yourself; a person must approve it.
- ask_agent: ask a colleague; it shares only general knowledge, never what other people told it.
Never reveal one person's memories to another. Facts marked (unconfirmed) may be wrong.`;

/**
 * The stable prefix: persona, job, instructions, tool guidance, active lessons.
 * Nothing in it changes from turn to turn (no time, no person, no memory), so
 * a provider's prompt cache holds until a lesson or the agent itself changes.
 */
export function systemPrefix(agent: Agent, lessons: readonly string[], withTools: boolean): string {
  const parts = [`You are ${agent.name}, an agent in a Roster wallet. Your job: ${agent.job}`];
  if (agent.instructions.trim() !== '') parts.push(agent.instructions.trim());
  parts.push(withTools ? toolGuidance : 'You have no memory in this conversation: you do not know who is writing, and you keep nothing.');
  if (lessons.length > 0) parts.push(['Lessons people approved for you:', ...lessons.map((lesson) => `- ${lesson}`)].join('\n'));
  return parts.join('\n\n');
}

/** The memory block of one turn: who is talking and the facts retrieved for this message. */
export function memoryBlock(options: { person: Person | null; channel: string; kind: 'dm' | 'group'; facts: readonly SearchResult[] }): string {
  const lines = [
    options.person === null
      ? `An unknown sender is writing on ${options.channel}.`
      : `You are talking with ${options.person.name} on ${options.channel}${options.kind === 'group' ? ', in a group (private facts are withheld)' : ''}.`,
  ];
  if (options.facts.length > 0) {
    lines.push('What you remember that may be relevant (most relevant first):');
    for (const result of options.facts) {
      lines.push(`- ${result.fact.content}${result.fact.trust === 'candidate' ? ' (unconfirmed)' : ''}`);
    }
  }
  return lines.join('\n');
}

export interface StoredMessage {
  role: 'person' | 'agent' | 'system' | 'tool';
  content: string;
  personName: string | null;
  agentId: string | null;
  agentName: string | null;
}

/**
 * Recent history as the engine sees it, oldest first, within a token budget.
 * Other agents' replies (team mode) and other people's messages (groups) are
 * shown as user turns with the speaker's name.
 */
export function historyMessages(messages: readonly StoredMessage[], agentId: string, tokenBudget: number): EngineMessage[] {
  const chosen: EngineMessage[] = [];
  let tokens = 0;
  for (const message of [...messages].reverse()) {
    if (message.content === '') continue;
    const own = message.role === 'agent' && message.agentId === agentId;
    const speaker = message.role === 'agent' ? message.agentName ?? 'agent' : message.personName ?? 'someone';
    const text = own ? message.content : `${speaker}: ${message.content}`;
    const cost = Math.ceil(text.length / 4) + 4;
    if (tokens + cost > tokenBudget) break;
    tokens += cost;
    chosen.push({ role: own ? 'assistant' : 'user', content: text });
  }
  return chosen.reverse();
}

/**
 * The recent history an agent may see, as one SQL expression (jsonb, oldest
 * first) to read inside its own scope: its own exchanges with this person and
 * what was said to everyone in this conversation. Row-level security enforces
 * it; the query only orders it. Placeholders from `first`: the conversation,
 * the message the turn answers, the limit.
 */
export function historyExpression(first: number): string {
  const [conversation, before, limit] = [first, first + 1, first + 2].map((index) => `$${index}`);
  return `coalesce((select jsonb_agg(jsonb_build_object('role', h.role, 'content', h.content, 'personName', h.person_name, 'agentId', h.agent_id, 'agentName', h.agent_name)
              order by h.created_at, h.id)
       from (select m.id, m.created_at, m.role, m.content, p.name as person_name, m.agent_id, a.name as agent_name
             from messages m left join people p on p.id = m.person_id left join agents a on a.id = m.agent_id
             where m.conversation_id = ${conversation}::uuid and m.forgotten_at is null and m.id <> ${before}::uuid and m.role in ('person', 'agent')
               and m.created_at <= coalesce((select created_at from messages where id = ${before}::uuid), now())
             order by m.created_at desc, m.id desc limit ${limit}::integer) h), '[]'::jsonb)`;
}

/** The history expression's value as the prompt reads it: a person's line names the person, an agent's reply the agent. */
export function historyFromJson(value: unknown): StoredMessage[] {
  const rows = (typeof value === 'string' ? JSON.parse(value) : value ?? []) as StoredMessage[];
  return rows.map((row) => ({ ...row, personName: row.role === 'person' ? row.personName : null }));
}
