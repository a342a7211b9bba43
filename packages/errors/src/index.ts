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
