/**
 * Turning a failure into the one line an operator reads. Roster's own errors
 * already say what to do; errors from Node, drivers and libraries get their
 * first line and, for the usual system errors, a hint. The stack is for
 * LOG_LEVEL=debug (or trace) only.
 */

/** A Node system error: `code`, and where known the path or address it concerned. */
interface SystemError extends Error {
  code?: string;
  syscall?: string;
  path?: string;
  address?: string;
  port?: number;
}

const fileSystemCodes = new Set(['EROFS', 'EACCES', 'EPERM', 'ENOTDIR', 'ENOSPC', 'EISDIR', 'EEXIST']);
const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** Whether the environment asks for stacks: LOG_LEVEL=debug or trace. */
export function wantsStacks(env: Readonly<Record<string, string | undefined>>): boolean {
  return env.LOG_LEVEL === 'debug' || env.LOG_LEVEL === 'trace';
}

/** The first line of a message, without a trailing full stop (the caller adds its own). */
function firstLine(message: string): string {
  return (message.split('\n')[0] ?? '').trim().replace(/\.$/, '');
}

/** The underlying error of a wrapper that carries no message of its own (AggregateError of a dual-stack connect). */
function innermost(error: unknown): unknown {
  if (error instanceof AggregateError && error.message === '' && error.errors.length > 0) return error.errors[0];
  return error;
}

/**
 * One line for a failure that is not one of Roster's own errors: what failed
 * and, for the common system errors, what to do.
 */
export function describeFailure(failure: unknown): string {
  const error = innermost(failure);
  if (!(error instanceof Error)) return String(error);
  const system = error as SystemError;
  const message = firstLine(error.message) || error.name;
  if (system.code !== undefined && fileSystemCodes.has(system.code)) {
    return `${message}. Check that ROSTER_DATA_DIR names a folder Roster can write to (and that the disk has room).`;
  }
  if (system.code !== undefined && networkCodes.has(system.code)) {
    const where = system.address === undefined ? '' : ` (${system.address}${system.port === undefined ? '' : `:${system.port}`})`;
    return `${message}${where}. Check that the server is running and that DATABASE_URL and REDIS_URL point to it.`;
  }
  return `${message}.`;
}

/** The stack of a failure and of its causes, for LOG_LEVEL=debug. */
export function stackOf(failure: unknown): string {
  const lines: string[] = [];
  let current: unknown = failure;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth += 1) {
    lines.push(current instanceof Error ? (current.stack ?? current.message) : String(current));
    current = current instanceof Error ? current.cause : undefined;
    if (current !== undefined) lines.push('Caused by:');
  }
  return lines.join('\n');
}
