import type { ChannelLogger } from '@roster/contracts';
import { logger as sdkRootLogger, type Logger as SdkLogger } from 'matrix-js-sdk/lib/logger.js';

/**
 * matrix-js-sdk logs through its own global logger (loglevel), straight to
 * the console, at debug level and above: every request, every sync. Roster
 * logs through pino, and nothing of its own writes to the console. These
 * helpers send the SDK's lines to the adapter's logger at `debug` (what the
 * SDK calls an error is a retry it handles itself: the adapter logs what
 * matters to an operator in its own words).
 */
let sink: ChannelLogger | undefined;

/** The SDK's global logger, as loglevel exposes it (the SDK's type hides these members). */
interface LoglevelLogger {
  methodFactory: (methodName: string, level: number, loggerName: string | symbol) => (...message: unknown[]) => void;
  rebuild(): void;
}

function write(method: string, message: unknown[]): void {
  sink?.debug({ sdk: method, message: message.map(describe).join(' ').slice(0, 2000) }, 'matrix-js-sdk');
}

function describe(part: unknown): string {
  if (typeof part === 'string') return part;
  if (part instanceof Error) return `${part.name}: ${part.message}`;
  try {
    return JSON.stringify(part) ?? String(part);
  } catch {
    return String(part);
  }
}

// Done as this module is first evaluated, before the SDK's own modules: one of them binds the logger's
// methods when it loads (event-timeline-set's `debuglog`), and would keep writing to the console otherwise.
// Every module here that imports the SDK imports this one first. Until an adapter starts, lines are dropped.
const root = sdkRootLogger as unknown as LoglevelLogger;
root.methodFactory = (methodName) => (...message) => write(methodName, message);
root.rebuild();

/**
 * Send the SDK's lines to `logger` (the latest adapter's; they all write at
 * debug). Loggers the SDK makes later (`getChild`) take the same route.
 */
export function routeSdkLogs(logger: ChannelLogger | undefined): void {
  sink = logger;
}

/** A logger for one client (`createClient({ logger })`): the same route, with a prefix for its child loggers. */
export function clientLogger(prefix = ''): SdkLogger {
  const at =
    (method: string) =>
    (...message: unknown[]): void =>
      write(method, prefix === '' ? message : [prefix, ...message]);
  return {
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    getChild: (namespace: string) => clientLogger(`${prefix}${namespace}`),
  };
}
