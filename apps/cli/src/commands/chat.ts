import readline from 'node:readline';
import type { InboundMessage, Person, TurnResult } from '@roster/core';
import { UsageError } from '@roster/errors';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand, refuseTogether } from '../parse.js';
import { openRoster, resolvePerson } from './roster-runtime.js';

function inbound(person: Person, text: string, team: boolean): InboundMessage {
  return {
    channel: 'cli',
    conversation: { externalId: `${team ? 'team' : 'solo'}:${person.id}`, kind: 'dm' },
    sender: { personId: person.id },
    text,
  };
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
      const result = await roster.core.handle(inbound(person, positionals.join(' '), team), options);
      printTurn(io, result, values.json === true);
      return exitCode.ok;
    }
    const lines = readline.createInterface({ input, terminal: false });
    io.err(`Talking as ${person.name}${team ? ' to every agent' : ` to ${values.agent}`}. An empty line or Ctrl+D ends.`);
    for await (const line of lines) {
      if (line.trim() === '') break;
      const result = await roster.core.handle(inbound(person, line, team), options);
      printTurn(io, result, values.json === true);
    }
    return exitCode.ok;
  } finally {
    await database.close();
  }
}
