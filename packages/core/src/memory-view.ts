import type { Fact, Memory, Tombstone } from '@roster/memory';
import type { Scope } from '@roster/db';
import type { Agent, Directory, Person } from './directory.js';

/** What an agent remembers, as its owner reads it: the agent-wide facts, then each person's own. */
export interface MemoryView {
  agent: Agent;
  /** Facts for everyone the agent talks to. */
  agentWide: Fact[];
  /** What was forgotten of the agent-wide facts: when, and who asked; never its words. */
  agentWideTombstones: Tombstone[];
  /** Each person's private facts and tombstones: with `person`, that person alone (even with none); else everyone who has some. */
  people: Array<{ person: Person; facts: Fact[]; tombstones: Tombstone[] }>;
}

export interface MemoryViewOptions {
  /** Only this person's facts (and the agent-wide ones). */
  person?: Person;
  /** What was true at this time, as recorded at `recordedAt` (default now). */
  validAt?: Date;
  /** What was believed at this time: true then, or true at `validAt`. */
  recordedAt?: Date;
}

/**
 * An agent's memory by person. Each person's facts are read through that
 * person's own scope, so row-level security decides every row as it does
 * for the agent itself. Without a time, what is believed now; with one, what
 * was believed at `recordedAt` (now) to hold at `validAt` (default `recordedAt`).
 */
export async function readMemoryView({ directory, memory }: { directory: Directory; memory: Memory }, agent: Agent, options: MemoryViewOptions = {}): Promise<MemoryView> {
  const { recordedAt } = options;
  const validAt = options.validAt ?? recordedAt;
  const read = (scope: Scope): Promise<Fact[]> =>
    validAt === undefined ? memory.list(scope) : memory.asOf(scope, { validAt, ...(recordedAt === undefined ? {} : { recordedAt }) });
  // Tombstones recorded by the moment read: a fact forgotten later was not yet forgotten then.
  const tombstones = (scope: Scope): Promise<Tombstone[]> => memory.tombstones(scope, recordedAt === undefined ? {} : { recordedAt });
  const agentWideScope: Scope = { agentId: agent.id, personId: null, audience: 'agent' };
  const agentWide = await read(agentWideScope);
  const agentWideTombstones = await tombstones(agentWideScope);
  const people: MemoryView['people'] = [];
  for (const person of options.person === undefined ? await directory.listPeople() : [options.person]) {
    const scope: Scope = { agentId: agent.id, personId: person.id, audience: 'private' };
    // A person's scope also reads the agent-wide facts, listed once above.
    const facts = (await read(scope)).filter((fact) => fact.audience === 'private');
    const forgotten = await tombstones(scope);
    if (facts.length > 0 || forgotten.length > 0 || options.person !== undefined) people.push({ person, facts, tombstones: forgotten });
  }
  return { agent, agentWide, agentWideTombstones, people };
}
