import type { Agent, Person, SourceMessage } from '@roster/core';
import type { Fact, SearchResult } from '@roster/memory';
import { z } from 'zod';

/** Times travel as ISO 8601 strings. */
const time = z.iso.datetime();
const iso = (date: Date): string => date.toISOString();
const isoOrNull = (date: Date | null): string | null => (date === null ? null : date.toISOString());

export const personSchema = z.object({ id: z.uuid(), name: z.string(), role: z.enum(['owner', 'member', 'guest']) });
export const personRefSchema = z.object({ id: z.uuid(), name: z.string() });
export const showPerson = (person: Person) => ({ id: person.id, name: person.name, role: person.role });

export const agentSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  job: z.string(),
  engine: z.string(),
  status: z.enum(['active', 'archived', 'purged']),
  createdAt: time,
});
export const showAgent = (agent: Agent) => ({ id: agent.id, name: agent.name, job: agent.job, engine: agent.engine, status: agent.status, createdAt: iso(agent.createdAt) });

const trust = z.enum(['candidate', 'active', 'verified', 'disputed', 'retracted', 'rejected', 'faded', 'forgotten']);

export const provenanceSchema = z.object({
  actorKind: z.string(),
  actorId: z.string().nullable(),
  channel: z.string().nullable(),
  tool: z.string().nullable(),
  sourceMessageIds: z.array(z.string()),
});

export const factSchema = z.object({
  id: z.uuid(),
  content: z.string().nullable().describe('null once forgotten'),
  trust,
  category: z.string(),
  audience: z.enum(['private', 'agent']),
  validFrom: time,
  validTo: time.nullable(),
  recordedAt: time,
  supersededAt: time.nullable(),
  uses: z.number().int(),
  lastUsedAt: time.nullable(),
  provenance: provenanceSchema,
});

/** A message a fact was drawn from, as the reader may see it. */
export const sourceMessageSchema = z.object({
  id: z.uuid(),
  channel: z.string().describe('The door it came through: web, telegram, …'),
  role: z.enum(['person', 'agent', 'system', 'tool']),
  person: personRefSchema.nullable().describe('Who said it, or to whom an agent answered it.'),
  agent: z.string().nullable(),
  at: time,
  forgotten: z.boolean(),
  own: z.boolean().describe('The reader’s own line: only then are its words given.'),
  text: z.string().nullable().describe('The words: only of the reader’s own lines, and null once forgotten.'),
});
export const showSourceMessage = (message: SourceMessage): z.infer<typeof sourceMessageSchema> => ({ ...message, at: iso(message.at) });
export const showFact = (fact: Fact) => ({
  id: fact.id,
  content: fact.content,
  trust: fact.trust,
  category: fact.category,
  audience: fact.audience,
  validFrom: iso(fact.validFrom),
  validTo: isoOrNull(fact.validTo),
  recordedAt: iso(fact.recordedAt),
  supersededAt: isoOrNull(fact.supersededAt),
  uses: fact.uses,
  lastUsedAt: isoOrNull(fact.lastUsedAt),
  provenance: { actorKind: fact.actorKind, actorId: fact.actorId, channel: fact.channel, tool: fact.tool, sourceMessageIds: fact.sourceMessageIds },
});

export const memoryUsedSchema = z.object({
  id: z.uuid(),
  content: z.string().nullable(),
  trust,
  why: z.string().describe('Why search chose it: which arms matched, at what rank, and its weights.'),
});

/** A fact the prompt carried, and why search chose it, in words a page can show. */
export function showMemoryUsed(result: SearchResult): z.infer<typeof memoryUsedSchema> {
  const { scores } = result;
  const matched = [
    ...(scores.fullText === null ? [] : [`words matched (rank ${scores.fullText.rank})`]),
    ...(scores.vector === null ? [] : [`close in meaning (rank ${scores.vector.rank}, distance ${scores.vector.distance.toFixed(3)})`]),
  ];
  const why = `${matched.length > 0 ? matched.join(', ') : 'recent'}; trust ${result.fact.trust} ×${scores.trustWeight.toFixed(2)}, recency ×${scores.recencyWeight.toFixed(2)}; relevance ${scores.relevance.toFixed(4)}`;
  return { id: result.fact.id, content: result.fact.content, trust: result.fact.trust, why };
}

export const okSchema = z.object({ ok: z.literal(true) });

/** A name in a path: what agentByName and personByName take. */
export const nameParam = z.string().min(1).max(80);
export const uuidParam = z.uuid({ message: 'not an id' });
