import type { Agent, Person, SourceMessage } from '@roster/core';
import type { Fact, SearchResult } from '@roster/memory';
import { memoryUsedSchema, sourceMessageSchema } from '@roster/api';
import { z } from 'zod';

export { agentSchema, factSchema, memoryUsedSchema, okSchema, personSchema, sourceMessageSchema } from '@roster/api';

const iso = (date: Date): string => date.toISOString();
const isoOrNull = (date: Date | null): string | null => (date === null ? null : date.toISOString());

export const showPerson = (person: Person) => ({ id: person.id, name: person.name, role: person.role });

export const showAgent = (agent: Agent) => ({ id: agent.id, name: agent.name, job: agent.job, engine: agent.engine, status: agent.status, createdAt: iso(agent.createdAt) });

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

/** A name in a path: what agentByName and personByName take. */
export const nameParam = z.string().min(1).max(80);
export const uuidParam = z.uuid({ message: 'not an id' });
