import { randomUUID } from 'node:crypto';
import readline from 'node:readline';
import type { InboundMessage, Person, TurnOptions, TurnResult } from '@roster/core';
import { isConnectionLost } from '@roster/db';
import { RosterError, UsageError } from '@roster/errors';
import type { Runtime } from '@roster/runtime';
import { describeFailure } from '../failure.js';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand, refuseTogether } from '../parse.js';
import { openRoster, resolvePerson } from './roster-runtime.js';

/** One turn's message, with an id of its own: sent again after a broken connection, it is stored once. */
function inbound(person: Person, text: string, team: boolean): InboundMessage {
  return {
    channel: 'cli',
    conversation: { externalId: `${team ? 'team' : 'solo'}:${person.id}`, kind: 'dm' },
    sender: { personId: person.id },
    externalMessageId: `cli:${randomUUID()}`,
    text,
  };
}

/**
 * One turn, tried once more with the same message id when the connection to
 * the database broke (the embedded database's host stopped, a server
 * Postgres restarted): the next connection reaches a new one. When the first
 * try had stored the message already, the second finds it and stores nothing
 * again; the turn is reported failed, since its answer was lost.
 */
async function turn(roster: Runtime, message: InboundMessage, options: TurnOptions): Promise<TurnResult> {
  let first: unknown;
  try {
    return await roster.core.handle(message, options);
  } catch (error) {
    if (!isConnectionLost(error)) throw error;
    first = error;
  }
  const reason = describeFailure(first).replace(/\.$/, '');
  let again: TurnResult;
  try {
    again = await roster.core.handle(message, options);
  } catch (error) {
    throw new RosterError(
      'turn_failed',
      `The connection to the database broke during this turn (${reason}), and trying once more failed: ${RosterError.isInstance(error) ? error.message : describeFailure(error)} The message may be kept without an answer.`,
      { cause: error },
    );
  }
  if (again.duplicate) {
    throw new RosterError('turn_failed', `The connection to the database broke during this turn (${reason}): the message is kept, but its answer was lost. Ask again to have it answered.`, { cause: first });
  }
  return again;
}

function printTurn(io: CommandIo, result: TurnResult, json: boolean): void {
  if (json) {
    io.out(
      JSON.stringify({
        replies: result.replies.map((reply) => ({ agent: reply.agent, text: reply.text, toolCalls: reply.toolCalls })),
        ...(result.notice === null ? {} : { notice: result.notice }),
      }),
    );
    return;
  }
  if (result.notice !== null) io.out(result.notice);
  for (const reply of result.replies) io.out(result.replies.length > 1 ? `${reply.agent}: ${reply.text}` : reply.text);
}

/** One turn from the command line, or an interactive session without a message. */
export async function runChat(args: string[], io: CommandIo, input: NodeJS.ReadableStream = process.stdin): Promise<number> {
  const { values, positionals } = parseCommand(args, { agent: { type: 'string' }, as: { type: 'string' }, team: { type: 'boolean' }, json: { type: 'boolean' } }, true);
  refuseTogether(values, 'agent', 'team', '--team talks to every active agent.');
  const team = values.team === true;
  if (typeof values.agent !== 'string' && !team) throw new UsageError('Say which agent: --agent NAME, or --team for all of them.');
  const { database, roster } = await openRoster(io);
  try {
    const person = await resolvePerson(roster, typeof values.as === 'string' ? values.as : undefined);
    const options = { ...(typeof values.agent === 'string' ? { agent: values.agent } : {}), team };
    if (typeof values.agent === 'string') await roster.core.directory.agentByName(values.agent);
    if (positionals.length > 0) {
      printTurn(io, await turn(roster, inbound(person, positionals.join(' '), team), options), values.json === true);
      return exitCode.ok;
    }
    const lines = readline.createInterface({ input, terminal: false });
    io.err(`Talking as ${person.name}${team ? ' to every agent' : ` to ${values.agent}`}. An empty line or Ctrl+D ends.`);
    let failed = false;
    for await (const line of lines) {
      if (line.trim() === '') break;
      try {
        printTurn(io, await turn(roster, inbound(person, line, team), options), values.json === true);
      } catch (error) {
        // One line, and the session goes on: the next line may well be answered.
        if (!RosterError.isInstance(error) || error.code === 'database_closed') throw error;
        failed = true;
        io.err(error.message);
      }
    }
    return failed ? exitCode.failure : exitCode.ok;
  } finally {
    await database.close();
  }
}
