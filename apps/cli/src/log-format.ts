
/** pino's level numbers, as a short line names them. */
const levelNames: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Longest a field's value may run on a terminal line before it is cut. */
const fieldWithin = 160;

const pad = (value: number) => String(value).padStart(2, '0');

function shown(value: unknown): string {
  const text = typeof value === 'string' ? (/[\s"=]/.test(value) ? JSON.stringify(value) : value) : JSON.stringify(value);
  return text.length > fieldWithin ? `${text.slice(0, fieldWithin - 1)}…` : text;
}

/**
 * One JSON log line (pino's, already redacted) as a short line for a person
 * at a terminal: the local time, the level, the component, the message, then
 * the other fields as key=value; an error by its message. A line that is not
 * JSON is passed through.
 */
function terminalLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const { level, time, msg, component, err, ...fields } = entry;
  const at = new Date(typeof time === 'number' ? time : Date.now());
  const clock = `${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
  const name = (typeof level === 'number' ? levelNames[level] : undefined) ?? String(level);
  const error = err !== null && typeof err === 'object' && 'message' in err ? ` (${String((err as { message: unknown }).message)})` : '';
  const rest = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${shown(value)}`)
    .join(' ');
  return `${clock} ${name.padEnd(5)} ${typeof component === 'string' ? `${component}: ` : ''}${String(msg ?? '')}${error}${rest === '' ? '' : `  ${rest}`}\n`;
}

/**
 * Whether log lines are short ones for a person: LOG_FORMAT when set (the
 * schema allows json or pretty), else when stderr is a terminal.
 */
export function prettyLogs(format: 'json' | 'pretty' | undefined, stderrIsTerminal: boolean): boolean {
  return format === undefined ? stderrIsTerminal : format === 'pretty';
}

/** A pino destination that writes each line to stderr in the terminal's short form. */
export function terminalDestination(): { write(line: string): void } {
  return { write: (line: string) => void process.stderr.write(terminalLine(line)) };
}
