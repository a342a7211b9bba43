import readline from 'node:readline';
import { connectionFromUrl, createQueues, removePersonJobs } from '@roster/jobs';
import { UsageError } from '@roster/errors';
import { locateRedis } from '@roster/redis';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand, refuseTogether } from '../parse.js';
import { openRoster } from './roster-runtime.js';

/**
 * Erase everything Roster holds about one person, with every agent and on
 * every channel (the owner's tool). Confirmed by the person's name: --confirm
 * NAME, --yes, or typed at the prompt when the command runs in a terminal.
 * Nothing changes until it is confirmed.
 */
export async function runPersonErase(args: string[], io: CommandIo, input: NodeJS.ReadStream = process.stdin): Promise<number> {
  const { values, positionals } = parseCommand(args, { confirm: { type: 'string' }, yes: { type: 'boolean' } }, true);
  if (positionals.length !== 1) throw new UsageError('Name one person: roster person forget NAME [--yes | --confirm NAME].');
  refuseTogether(values, 'yes', 'confirm', 'give one way of confirming.');
  if (values.yes !== true && typeof values.confirm !== 'string' && !input.isTTY) {
    throw new UsageError(`Erasing cannot be undone: confirm with --confirm ${positionals[0]!} or --yes.`);
  }
  const { database, roster, config } = await openRoster(io);
  let personId: string;
  try {
    const person = await roster.core.directory.personByName(positionals[0]!);
    const confirmation =
      values.yes === true
        ? person.name
        : typeof values.confirm === 'string'
          ? values.confirm
          : await ask(input, io, `This erases every fact, message, handle, lesson and session of ${person.name}, with every agent, for good. Type ${person.name} to go on: `);
    const erasure = await roster.core.erasePerson(person, confirmation, { kind: 'owner', id: 'person-erase' });
    personId = erasure.personId;
    const places = Object.entries(erasure.erased)
      .filter(([place, count]) => count > 0 && place !== 'learning_events_reopened')
      .map(([place, count]) => `${count} ${place.replaceAll('_', ' ')}`);
    const reopened = erasure.erased.learning_events_reopened ?? 0;
    io.out(
      `Erased ${person.name}: ${erasure.facts} fact${erasure.facts === 1 ? '' : 's'} forgotten, each leaving a keyed tombstone${places.length > 0 ? `; erased ${places.join(', ')}` : ''}.` +
        `${reopened > 0 ? ` ${reopened} learning event${reopened === 1 ? '' : 's'} of others behind a withdrawn lesson go back to review.` : ''}` +
        ` The erasure is in ${erasure.agents} agent${erasure.agents === 1 ? '’s' : 's’'} audit chain${erasure.agents === 1 ? '' : 's'}; a worker's erase job takes the words off the disk.`,
    );
  } finally {
    await database.close();
  }
  // Jobs already handed to Redis carry ids only; those naming the person go too. The erasure stands if Redis is away.
  try {
    const queues = createQueues(connectionFromUrl(await locateRedis(config.REDIS_URL, config.ROSTER_DATA_DIR)), config.ROSTER_QUEUE_PREFIX);
    try {
      const removed = Object.values(await removePersonJobs(queues, personId)).reduce((sum, count) => sum + count, 0);
      if (removed > 0) io.err(`Removed ${removed} queued job${removed === 1 ? '' : 's'} that named them.`);
    } finally {
      await queues.close();
    }
  } catch {
    io.err('Redis is not reachable: queued jobs that name them (ids only, never words) were not removed; they find nothing of them when they run.');
  }
  return exitCode.ok;
}

/** One line typed at the terminal. */
async function ask(input: NodeJS.ReadStream, io: CommandIo, question: string): Promise<string> {
  io.err(question);
  const lines = readline.createInterface({ input, terminal: false });
  try {
    for await (const line of lines) return line;
    return '';
  } finally {
    lines.close();
  }
}
