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
 * try had stored the message already, the second finds it and stores it not
 * again: it answers it, unless the first had stored its answer too (then the
 * turn is reported failed: the answer is kept but was not shown here).
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
    throw new RosterError('turn_failed', `The connection to the database broke during this turn (${reason}) after its answer was kept: the answer could not be shown here. Ask again to read it.`, { cause: first });
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

/** Once Ctrl-C is pressed mid-turn, the turn gets this long to end whole (its answer printed); then it is reported lost. */
const finishTurnWithinMs = 500;

const pause = (ms: number) => new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), ms).unref());

type Settled<T> = { value: T } | { error: unknown };
const settle = <T>(promise: Promise<T>): Promise<Settled<T>> => promise.then((value) => ({ value }), (error: unknown) => ({ error }));

/**
 * The interactive session: a prompt on a terminal, a turn per line, until an
 * empty line, Ctrl-D, or Ctrl-C (exit 130, within a second: a turn under way
 * is given half a second to end whole, else it is reported lost and
 * abandoned, still running, to the process's end).
 */
async function converse(
  roster: Runtime,
  io: CommandIo,
  input: NodeJS.ReadableStream,
  person: Person,
  options: TurnOptions & { agentLabel: string; json: boolean },
): Promise<number | 'abandoned'> {
  const { agentLabel, json, ...turnOptions } = options;
  const terminal = (input as NodeJS.ReadStream).isTTY === true && process.stderr.isTTY === true;
  // On a terminal the prompt and the typing go to stderr, so stdout holds only the replies.
  const lines = readline.createInterface({ input, ...(terminal ? { output: process.stderr, terminal: true, prompt: 'you> ' } : { terminal: false }) });
  let stop: (() => void) | undefined;
  let stopRequested = false;
  const stopped = new Promise<'stop'>((resolve) => {
    stop = () => {
      stopRequested = true;
      resolve('stop');
    };
  });
  // Ctrl-C: from the terminal's line editor (raw mode), or as the process's signal.
  lines.on('SIGINT', () => stop?.());
  void io.stopSignal.then(() => stop?.());
  const read = lines[Symbol.asyncIterator]();
  io.err(`Talking as ${person.name}${agentLabel}. An empty line or Ctrl+D ends; Ctrl+C stops.`);
  let failed = false;
  try {
    for (;;) {
      if (terminal) lines.prompt();
      const next = await Promise.race([read.next(), stopped]);
      if (next === 'stop') return exitCode.interrupted;
      if (next.done === true || next.value.trim() === '') return failed ? exitCode.failure : exitCode.ok;
      const answer = settle(turn(roster, inbound(person, next.value, turnOptions.team === true), turnOptions));
      let result = await Promise.race([answer, stopped]);
      if (result === 'stop') {
        const late = await Promise.race([answer, pause(finishTurnWithinMs)]);
        if (late === 'late') {
          io.err('Stopped mid-turn: your last message may be kept without its answer. Ask it again to have it answered.');
          return 'abandoned';
        }
        result = late;
      }
      if ('value' in result) printTurn(io, result.value, json);
      else {
        const error = result.error;
        // One line, and the session goes on: the next line may well be answered.
        if (!RosterError.isInstance(error) || error.code === 'database_closed') throw error;
        failed = true;
        io.err(error.message);
      }
      if (stopRequested) return exitCode.interrupted;
    }
  } finally {
    lines.close();
  }
}

/** One turn from the command line, or an interactive session without a message. */
export async function runChat(args: string[], io: CommandIo, input: NodeJS.ReadableStream = process.stdin): Promise<number> {
  const { values, positionals } = parseCommand(args, { agent: { type: 'string' }, as: { type: 'string' }, team: { type: 'boolean' }, json: { type: 'boolean' } }, true);
  refuseTogether(values, 'agent', 'team', '--team talks to every active agent.');
  const team = values.team === true;
  if (typeof values.agent !== 'string' && !team) throw new UsageError('Say which agent: --agent NAME, or --team for all of them.');
  const { database, roster } = await openRoster(io);
  let abandoned = false;
  try {
    const person = await resolvePerson(roster, typeof values.as === 'string' ? values.as : undefined);
    const options = { ...(typeof values.agent === 'string' ? { agent: values.agent } : {}), team };
    if (typeof values.agent === 'string') await roster.core.directory.agentByName(values.agent);
    if (positionals.length > 0) {
      printTurn(io, await turn(roster, inbound(person, positionals.join(' '), team), options), values.json === true);
      return exitCode.ok;
    }
    const outcome = await converse(roster, io, input, person, { ...options, agentLabel: team ? ' to every agent' : ` to ${values.agent}`, json: values.json === true });
    if (outcome !== 'abandoned') return outcome;
    abandoned = true;
    return exitCode.interrupted;
  } finally {
    // A turn given up on still runs: closing under it would only make it fail loudly. The process ends at once; the database rolls back what it had not committed.
    if (!abandoned) await database.close();
  }
}
