import { channelVariables } from '@roster/channel-registry';
import { describeEnvironment } from '@roster/config';
import type { CommandIo } from './io.js';

/** One command of the `roster` program. */
export interface Command {
  /** The words that name it: `['db', 'serve']`. The first word of a longer path names its group. */
  path: string[];
  usage: string;
  summary: string;
  /** More lines for `--help`: options and notes. */
  details: string[];
  run(args: string[], io: CommandIo): Promise<number>;
}

/** The widest line any help prints, in characters: it reads in an ordinary terminal. */
const helpWidth = 100;

/** How far a wrapped line's continuation is indented beyond the line's own indent. */
const continuationIndent = 4;

/**
 * Break a line at spaces so that no piece is wider than `helpWidth`;
 * continuation lines keep the line's indent plus four spaces. A single word
 * wider than the limit stays whole.
 */
function wrapLine(line: string): string[] {
  if ([...line].length <= helpWidth) return [line];
  const indent = /^ */.exec(line)?.[0] ?? '';
  const words = line.slice(indent.length).split(' ');
  const lines: string[] = [];
  let current = indent;
  let currentIndent = indent;
  for (const word of words) {
    const candidate = current === currentIndent ? `${current}${word}` : `${current} ${word}`;
    if ([...candidate].length > helpWidth && current !== currentIndent) {
      lines.push(current);
      currentIndent = `${indent}${' '.repeat(continuationIndent)}`;
      current = `${currentIndent}${word}`;
    } else {
      current = candidate;
    }
  }
  lines.push(current);
  return lines;
}

function wrap(lines: string[]): string {
  return lines.flatMap(wrapLine).join('\n');
}

/** A command as the overview and a group's help list it: its usage, then its summary beneath. */
function entry(command: Command): string[] {
  return [`  ${command.usage}`, `      ${command.summary}`];
}

/** `roster --help`: every command, the environment's variables, the exit codes. */
export function overview(commands: readonly Command[], version: string): string {
  return wrap([
    `Roster ${version}: a wallet of agents with truthful memory.`,
    '',
    'Usage: roster <command> [options]',
    '',
    'Commands:',
    ...commands.flatMap(entry),
    '',
    'Every command and group takes --help (or -h); roster --version prints the version.',
    'Configuration comes from the environment:',
    `  ${describeEnvironment(channelVariables)
      .map((row) => row.variable)
      .join(' ')}`,
    '',
    'Exit codes: 0 success, 1 failure, 2 usage error.',
  ]);
}

/** `roster agent --help`: the commands of one group. */
export function groupHelp(group: string, commands: readonly Command[]): string {
  return wrap([`Usage: roster ${group} <command> [options]`, '', 'Commands:', ...commands.flatMap(entry), '', `roster ${group} <command> --help shows one command.`]);
}

/** `roster agent add --help`: one command's usage, summary and details. */
export function commandHelp(command: Command): string {
  return wrap([`Usage: ${command.usage}`, '', command.summary, ...(command.details.length > 0 ? ['', ...command.details] : [])]);
}
