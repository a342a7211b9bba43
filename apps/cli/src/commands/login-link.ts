// Sign-in alone, not the whole server: the command starts in a fraction of the time.
import { createLoginLink, loginLinkUrl } from '@roster/server/credentials';
import { UsageError } from '@roster/errors';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { openRoster, resolvePerson } from './roster-runtime.js';

/** Print a fresh login link for the web page: the first owner's, or the named person's. */
export async function runLoginLink(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseCommand(args, { as: { type: 'string' } }, true);
  if (positionals.length > 0) throw new UsageError('Name the person with --as PERSON.');
  const { database, roster, config } = await openRoster(io);
  try {
    const person = await resolvePerson(roster, typeof values.as === 'string' ? values.as : undefined);
    const link = await createLoginLink(database, person.id);
    io.out(loginLinkUrl(config, link.token));
    // In local time with its zone, as the web page shows times.
    const until = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'long' }).format(link.expiresAt);
    io.err(`Signs ${person.name} (${person.role}) in once, until ${until}. Keep it to yourself.`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}
