import type { Person } from '@roster/core';
import { createRuntime, type Runtime } from '@roster/runtime';
import type { CommandIo } from '../io.js';
import { openRuntime, type Runtime as ProcessRuntime } from '../runtime.js';

/** Open the database (migrated) and wire memory, engines and the core. */
export async function openRoster(io: CommandIo): Promise<ProcessRuntime & { roster: Runtime }> {
  const base = await openRuntime(io);
  try {
    const roster = await createRuntime({ config: base.config, database: base.database, logger: base.logger });
    return { ...base, roster };
  } catch (error) {
    await base.database.close();
    throw error;
  }
}

/** The person a command acts as: the named one, or the owner (made on first use, so a fresh install just works). */
export async function resolvePerson(roster: Runtime, name: string | undefined): Promise<Person> {
  const directory = roster.core.directory;
  if (name !== undefined) return directory.personByName(name);
  const people = await directory.listPeople();
  return people.find((person) => person.role === 'owner') ?? (await directory.addPerson({ name: 'owner', role: 'owner' }));
}
