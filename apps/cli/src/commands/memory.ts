import { readMemoryView } from '@roster/core';
import type { Scope } from '@roster/db';
import type { Fact } from '@roster/memory';
import { UsageError } from '@roster/errors';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { openRoster } from './roster-runtime.js';

const owner = { actor: { kind: 'owner' as const, id: 'cli' }, channel: 'cli' };

/** The scope a fact lives in, found by the owner's tool; an id of another agent is not found. */
async function scopeOfFact(context: Awaited<ReturnType<typeof openRoster>>, agentName: string, factId: string): Promise<Scope> {
  const agent = await context.roster.core.directory.agentByName(agentName);
  return context.roster.memory.scopeOf(agent.id, factId);
}

/** A fact as `memory list --json` prints it. */
function shown(fact: Fact): Record<string, unknown> {
  return {
    id: fact.id,
    content: fact.content,
    trust: fact.trust,
    category: fact.category,
    audience: fact.audience,
    validFrom: fact.validFrom,
    validTo: fact.validTo,
    recordedAt: fact.recordedAt,
    supersededAt: fact.supersededAt,
  };
}

/** A time option, or a usage error that shows the expected form. */
function timeOption(name: string, value: unknown): Date | undefined {
  if (typeof value !== 'string') return undefined;
  const time = new Date(value);
  if (value.trim() === '' || Number.isNaN(time.getTime())) throw new UsageError(`--${name} takes a time like 2026-11-30T08:00:00Z, got ${JSON.stringify(value)}.`);
  return time;
}

function printFacts(io: CommandIo, facts: readonly Fact[], indent: string): void {
  if (facts.length === 0) io.out(`${indent}Nothing remembered here yet.`);
  else for (const fact of facts) io.out(`${indent}${fact.id}  ${fact.trust.padEnd(9)}  ${fact.content}`);
}

/**
 * What an agent remembers. With --person, what it remembers about that person
 * (their private facts and the agent-wide ones, as that person's scope reads
 * them). Without, the owner's view of everyone: the agent-wide facts, then
 * each person's own, each read through that person's scope, so row-level
 * security decides every row as it does for the agent itself. --valid-at
 * and --recorded-at read another moment: what was believed at the record
 * time (default now) to hold at the valid time (default the record time).
 */
export async function runMemoryList(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, {
    agent: { type: 'string' },
    person: { type: 'string' },
    'valid-at': { type: 'string' },
    'recorded-at': { type: 'string' },
    json: { type: 'boolean' },
  });
  if (typeof values.agent !== 'string') throw new UsageError('--agent is required.');
  const recordedAt = timeOption('recorded-at', values['recorded-at']);
  const validAt = timeOption('valid-at', values['valid-at']) ?? recordedAt;
  const context = await openRoster(io);
  try {
    const { directory } = context.roster.core;
    const agent = await directory.agentByName(values.agent);
    // Without a time, what is believed now; with one, what was believed at recordedAt (now) to hold at validAt.
    const read = (scope: Scope): Promise<Fact[]> =>
      validAt === undefined ? context.roster.memory.list(scope) : context.roster.memory.asOf(scope, { validAt, ...(recordedAt === undefined ? {} : { recordedAt }) });
    if (typeof values.person === 'string') {
      const person = await directory.personByName(values.person);
      const facts = await read({ agentId: agent.id, personId: person.id, audience: 'private' });
      if (values.json === true) io.out(JSON.stringify(facts.map(shown)));
      else printFacts(io, facts, '');
      return exitCode.ok;
    }
    const view = await readMemoryView({ directory, memory: context.roster.memory }, agent, {
      ...(validAt === undefined ? {} : { validAt }),
      ...(recordedAt === undefined ? {} : { recordedAt }),
    });
    const { agentWide } = view;
    // Everyone who has something remembered; a person with only tombstones has nothing to list here.
    const people = view.people.filter((group) => group.facts.length > 0);
    if (values.json === true) {
      io.out(JSON.stringify({ agent: agent.name, agentWide: agentWide.map(shown), people: people.map(({ person, facts }) => ({ person: person.name, role: person.role, facts: facts.map(shown) })) }));
      return exitCode.ok;
    }
    if (agentWide.length === 0 && people.length === 0) {
      io.out(`${agent.name} remembers nothing yet.`);
      return exitCode.ok;
    }
    io.out(`Agent-wide (everyone ${agent.name} talks to):`);
    printFacts(io, agentWide, '  ');
    for (const { person, facts } of people) {
      io.out(`${person.name} (${person.role}):`);
      printFacts(io, facts, '  ');
    }
    return exitCode.ok;
  } finally {
    await context.database.close();
  }
}

export async function runMemoryForget(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { agent: { type: 'string' }, fact: { type: 'string' } });
  if (typeof values.agent !== 'string' || typeof values.fact !== 'string') throw new UsageError('--agent and --fact are required.');
  const context = await openRoster(io);
  try {
    const scope = await scopeOfFact(context, values.agent, values.fact);
    const result = await context.roster.memory.forget(scope, values.fact, owner);
    io.out(`Forgotten. ${result.messagesErased} message${result.messagesErased === 1 ? '' : 's'} erased with it; only a hash is kept, so it is not learned again by itself.`);
    return exitCode.ok;
  } finally {
    await context.database.close();
  }
}

/**
 * “That was wrong”, from the terminal: through the core, as the page's
 * Correct… and a chat correction, so it is a learning event for the fact's
 * agent and person and, after harvest, a mirror case.
 */
export async function runMemoryCorrect(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { agent: { type: 'string' }, fact: { type: 'string' }, content: { type: 'string' }, json: { type: 'boolean' } });
  if (typeof values.agent !== 'string' || typeof values.fact !== 'string' || typeof values.content !== 'string') throw new UsageError('--agent, --fact and --content are required.');
  const context = await openRoster(io);
  try {
    const scope = await scopeOfFact(context, values.agent, values.fact);
    const { retracted, fact } = await context.roster.core.correctFact(scope, values.fact, values.content, owner);
    if (values.json === true) io.out(JSON.stringify({ retracted: { id: retracted.id, content: retracted.content }, fact: { id: fact.id, content: fact.content } }));
    else io.out(`Corrected: ${fact.id}  ${fact.content ?? ''} (it was wrong: ${retracted.id}). The next harvest makes it a mirror case.`);
    return exitCode.ok;
  } finally {
    await context.database.close();
  }
}

export async function runMemoryHistory(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { agent: { type: 'string' }, fact: { type: 'string' }, json: { type: 'boolean' } });
  if (typeof values.agent !== 'string' || typeof values.fact !== 'string') throw new UsageError('--agent and --fact are required.');
  const context = await openRoster(io);
  try {
    const scope = await scopeOfFact(context, values.agent, values.fact);
    const history = await context.roster.memory.history(scope, values.fact);
    if (values.json === true) {
      io.out(JSON.stringify(history.map((entry) => ({ relation: entry.relation, id: entry.fact.id, content: entry.fact.content, trust: entry.fact.trust, validFrom: entry.fact.validFrom, validTo: entry.fact.validTo, recordedAt: entry.fact.recordedAt }))));
    } else {
      for (const entry of history) {
        const validity = `${entry.fact.validFrom.toISOString()} → ${entry.fact.validTo?.toISOString() ?? 'now'}`;
        io.out(`${entry.relation.padEnd(7)} ${entry.fact.trust.padEnd(9)} ${validity}  ${entry.fact.content ?? '[forgotten]'}`);
      }
    }
    return exitCode.ok;
  } finally {
    await context.database.close();
  }
}
