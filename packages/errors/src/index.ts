const marker = Symbol.for('roster.error');

/** Options shared by every Roster error. */
export interface RosterErrorOptions {
  /** The underlying failure, kept for logs; never shown to a person as is. */
  cause?: unknown;
  /**
   * Whether the same call may succeed if tried again (a network blip, a 429).
   * Workers turn a non-retryable failure into an unrecoverable job.
   */
  retryable?: boolean;
  /**
   * The message without anything the far side of a network said (a
   * provider's error text can repeat the words it was sent): what places that
   * keep errors store, like a failed job in Redis. Defaults to the message.
   */
  storable?: string;
}

/**
 * The one base class of Roster's errors.
 *
 * `code` is stable and machine-readable (HTTP answers and CLI output carry it);
 * `message` tells the reader what to do. `isInstance` works across copies of
 * this package, because it checks a `Symbol.for` marker instead of the class.
 */
export class RosterError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  /** The message fit to be kept where a forget cannot reach: no text from the far side of a network. */
  readonly storable: string;
  private readonly [marker] = true;

  constructor(code: string, message: string, options: RosterErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RosterError';
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.storable = options.storable ?? message;
  }

  static isInstance(error: unknown): error is RosterError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true;
  }
}

/** One invalid environment variable. */
export interface ConfigIssue {
  variable: string;
  message: string;
}

/** The environment does not describe a runnable Roster; each issue names its variable. */
export class ConfigError extends RosterError {
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    super(
      'config_invalid',
      ['Invalid configuration:', ...issues.map((issue) => `  ${issue.variable}: ${issue.message}`)].join('\n'),
    );
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

/** The command line was not understood; the CLI exits 2 on it. */
export class UsageError extends RosterError {
  constructor(message: string) {
    super('usage', message);
    this.name = 'UsageError';
  }
}

const embedderMarker = Symbol.for('roster.embedder-error');

/** Options of an `EmbedderError`. */
export interface EmbedderErrorOptions extends RosterErrorOptions {
  /** The HTTP status the embedder answered with, when it answered at all. */
  status?: number;
}

/**
 * An embedder failed. Codes: `embedder_unreachable`, `embedder_timeout`,
 * `embedder_http_<status>`, `embedder_bad_response`, `embedder_key_missing`,
 * `embedder_options_invalid`, `embedder_failed` (anything else the client
 * refused). `retryable` tells the job worker whether to try again (network
 * errors, timeouts, 408, 409, 429, 5xx: what the AI SDK itself retries) or
 * give up (400, 401, 403, 404, a malformed answer, a missing key). Messages
 * never carry an API key.
 */
export class EmbedderError extends RosterError {
  /** The HTTP status, or undefined when there was no HTTP answer. */
  readonly status: number | undefined;
  private readonly [embedderMarker] = true;

  constructor(code: string, message: string, options: EmbedderErrorOptions = {}) {
    super(code, message, options);
    this.name = 'EmbedderError';
    this.status = options.status;
  }

  static override isInstance(error: unknown): error is EmbedderError {
    return (
      typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[embedderMarker] === true
    );
  }
}
