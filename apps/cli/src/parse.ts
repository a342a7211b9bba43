import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from '@roster/errors';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface ParsedCommand {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** Parse a command's arguments strictly: an unknown option or a missing value is a usage error. */
export function parseCommand(args: string[], options: Options, allowPositionals = false): ParsedCommand {
  try {
    return parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true }) as ParsedCommand;
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/^TypeError \[[A-Z_]+\]: /, ''));
  }
}

/** A whole number from `min` to `max`, or a usage error naming the option. */
export function parseInteger(value: string | undefined, option: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < min || number > max) {
    throw new UsageError(`${option} takes a whole number from ${min} to ${max}, got ${JSON.stringify(value)}.`);
  }
  return number;
}

/** Refuse options that exclude each other, naming both: a usage error rather than one of them silently ignored. */
export function refuseTogether(values: ParsedCommand['values'], first: string, second: string, why: string): void {
  if (values[first] !== undefined && values[second] !== undefined && values[first] !== false && values[second] !== false) {
    throw new UsageError(`--${first} and --${second} exclude each other: ${why}`);
  }
}
