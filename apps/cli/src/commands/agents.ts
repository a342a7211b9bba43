import { RosterError, UsageError } from '@roster/errors';
import type { Runtime } from '@roster/runtime';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { openRoster } from './roster-runtime.js';

export async function runAgentAdd(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { name: { type: 'string' }, job: { type: 'string' }, engine: { type: 'string' }, instructions: { type: 'string' }, json: { type: 'boolean' } });
  if (typeof values.name !== 'string' || typeof values.job !== 'string') throw new UsageError('--name and --job are required.');
  const { database, roster, config } = await openRoster(io);
  try {
    const engine = typeof values.engine === 'string' ? values.engine : config.ROSTER_ENGINE;
    // Refuse an engine that cannot be made (unknown form, missing key) before storing the agent.
    roster.checkEngine(engine, values.name);
    const agent = await roster.core.directory
      .addAgent({
        name: values.name,
        job: values.job,
        engine,
        ...(typeof values.instructions === 'string' ? { instructions: values.instructions } : {}),
      })
      .catch((error: unknown) => sayWhichExists(roster.core.directory, values.name as string, error));
    io.out(values.json === true ? JSON.stringify(agent) : `Added ${agent.name} (${agent.engine}): ${agent.job}`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

/**
 * Names are one whatever their case ("ZOË" is "Zoë"): a refusal names the
 * agent that holds the name, as it is spelt, rather than echoing the new one.
 */
async function sayWhichExists(directory: Runtime['core']['directory'], name: string, error: unknown): Promise<never> {
  if (!RosterError.isInstance(error) || error.code !== 'agent_exists') throw error;
  const wanted = name.trim().toLowerCase();
  const holder = (await directory.listAgents({ includeArchived: true })).find((agent) => agent.name.toLowerCase() === wanted);
  if (holder === undefined) throw error;
  const archived = holder.status === 'archived' ? ' (archived)' : '';
  throw new RosterError('agent_exists', `An agent named ${holder.name}${archived} already exists, and names are the same whatever their case: choose another name.`, { cause: error });
}

export async function runAgentList(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { json: { type: 'boolean' }, all: { type: 'boolean' } });
  const { database, roster } = await openRoster(io);
  try {
    const agents = await roster.core.directory.listAgents({ includeArchived: values.all === true });
    if (values.json === true) io.out(JSON.stringify(agents.map(({ id, name, job, engine, status }) => ({ id, name, job, engine, status }))));
    else if (agents.length === 0) io.out('No agents yet. Add one: roster agent add --name Scout --job "finds things"');
    else {
      const width = Math.max(...agents.map((agent) => agent.name.length));
      for (const agent of agents) io.out(`${agent.name.padEnd(width)}  ${agent.engine}  ${agent.status === 'archived' ? '(archived) ' : ''}${agent.job}`);
    }
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

export async function runAgentArchive(args: string[], io: CommandIo): Promise<number> {
  const { positionals } = parseCommand(args, {}, true);
  if (positionals.length !== 1) throw new UsageError('Name one agent to archive.');
  const { database, roster } = await openRoster(io);
  try {
    const agent = await roster.core.directory.archiveAgent(positionals[0]!);
    io.out(`Archived ${agent.name}. Its memory is kept: roster agent restore ${agent.name} makes it active again; a confirmed purge forgets it.`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

export async function runAgentRestore(args: string[], io: CommandIo): Promise<number> {
  const { positionals } = parseCommand(args, {}, true);
  if (positionals.length !== 1) throw new UsageError('Name one archived agent to restore.');
  const { database, roster } = await openRoster(io);
  try {
    const agent = await roster.core.directory.restoreAgent(positionals[0]!);
    io.out(`Restored ${agent.name}: it is active again, with the memory it kept.`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

export async function runAgentRename(args: string[], io: CommandIo): Promise<number> {
  const { positionals } = parseCommand(args, {}, true);
  if (positionals.length !== 2) throw new UsageError('Give the agent’s name and its new one: roster agent rename OLD NEW.');
  const { database, roster } = await openRoster(io);
  try {
    const before = await roster.core.directory.agentByName(positionals[0]!);
    const agent = await roster.core.directory.renameAgent(before.name, positionals[1]!);
    io.out(`Renamed ${before.name} to ${agent.name}; its memory, lessons and conversations stay with it.`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

export async function runPersonAdd(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseCommand(args, { role: { type: 'string' }, json: { type: 'boolean' } }, true);
  if (positionals.length !== 1) throw new UsageError('Give one name: roster person add Ada [--role member].');
  const { database, roster } = await openRoster(io);
  try {
    const person = await roster.core.directory.addPerson({
      name: positionals[0]!,
      ...(typeof values.role === 'string' ? { role: values.role as 'owner' | 'member' | 'guest' } : {}),
    });
    io.out(values.json === true ? JSON.stringify(person) : `Added ${person.name} (${person.role}).`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

export async function runPersonList(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { json: { type: 'boolean' } });
  const { database, roster } = await openRoster(io);
  try {
    const people = await roster.core.directory.listPeople();
    const speaker = await roster.core.directory.firstOwner();
    if (values.json === true) {
      io.out(JSON.stringify(people.map(({ id, name, role }) => ({ id, name, role, defaultSpeaker: id === speaker?.id }))));
    } else if (people.length === 0) {
      io.out('No people yet. Add one: roster person add Ada (roster chat makes an owner on first use).');
    } else {
      const width = Math.max(...people.map((person) => person.name.length));
      for (const person of people) {
        io.out(person.id === speaker?.id ? `${person.name.padEnd(width)}  ${person.role.padEnd(6)}  (roster chat speaks as this person without --as)` : `${person.name.padEnd(width)}  ${person.role}`);
      }
    }
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

export async function runPersonLinkCode(args: string[], io: CommandIo): Promise<number> {
  const { positionals } = parseCommand(args, {}, true);
  if (positionals.length !== 1) throw new UsageError('Give the person: roster person link-code Ada.');
  const { database, roster } = await openRoster(io);
  try {
    const person = await roster.core.directory.personByName(positionals[0]!);
    const { code, expiresAt } = await roster.core.directory.createLinkCode(person.id);
    io.out(code);
    io.err(`${person.name} sends "/link ${code}" from the new channel before ${expiresAt.toISOString()}; the code works once.`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

export async function runAgentPurge(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseCommand(args, { confirm: { type: 'string' } }, true);
  if (positionals.length !== 1) throw new UsageError('Name one archived agent: roster agent purge NAME --confirm NAME.');
  const { database, roster } = await openRoster(io);
  try {
    const { facts, erased } = await roster.core.purgeAgent(positionals[0]!, typeof values.confirm === 'string' ? values.confirm : '');
    const places = Object.entries(erased).filter(([, count]) => count > 0).map(([place, count]) => `${count} ${place.replaceAll('_', ' ')}`);
    io.out(`Purged: ${facts} fact${facts === 1 ? '' : 's'} forgotten, each leaving a tombstone and an audit event${places.length > 0 ? `; erased ${places.join(', ')}` : ''}.`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}
