import type { InstallationKey } from '@roster/config';
import type { Person } from '@roster/core';
import type { Runtime } from '@roster/runtime';
import type { CommandIo } from '../io.js';
import { openKeyedRuntime, type Runtime as ProcessRuntime } from '../runtime.js';

/** Open the database (migrated) and wire memory, engines and the core. */
export async function openRoster(io: CommandIo): Promise<ProcessRuntime & { key: InstallationKey; roster: Runtime }> {
  // The database opens first (on a folder nobody holds, its host starts in a process of its own), and the core's
  // modules load meanwhile: a cold command waits for the longer of the two, not for both.
  const opening = openKeyedRuntime(io);
  const loading = import('@roster/runtime');
  loading.catch(() => {});
  const base = await opening;
  try {
    const { createRuntime } = await loading;
    const roster = await createRuntime({ config: base.config, database: base.database, logger: base.logger, key: base.key });
    return { ...base, roster };
  } catch (error) {
    await base.database.close();
    throw error;
  }
}

/**
 * The person a command acts as: the named one, or else always the same one,
 * the first owner created (made on first use, so a fresh install just works).
 * Adding a second owner never changes whom an unnamed command speaks for.
 */
export async function resolvePerson(roster: Runtime, name: string | undefined): Promise<Person> {
  const directory = roster.core.directory;
  if (name !== undefined) return directory.personByName(name);
  return (await directory.ensureFirstOwner()).person;
}
