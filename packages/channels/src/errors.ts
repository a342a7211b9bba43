import { RosterError } from '@roster/errors';

/**
 * Why a platform refused a call:
 * - `rate-limited`: too many calls; try again after `retryAfterMs` (a 429).
 * - `unreachable`: the person cannot be reached (blocked the bot, left, was
 *   deactivated); trying again will not help.
 * - `failed`: anything else; `retryable` says whether trying again may help.
 */
export type ChannelFailure = 'rate-limited' | 'unreachable' | 'failed';

/** A platform call failed. The message never repeats what was sent. */
export class ChannelError extends RosterError {
  readonly failure: ChannelFailure;
  /** How long the platform asked to wait before the next call, for `rate-limited`. */
  readonly retryAfterMs: number | null;

  constructor(failure: ChannelFailure, message: string, options: { retryAfterMs?: number; retryable?: boolean; cause?: unknown } = {}) {
    super(`channel_${failure.replace('-', '_')}`, message, {
      retryable: options.retryable ?? failure === 'rate-limited',
      ...(options.cause === undefined ? {} : { cause: options.cause }),
    });
    this.name = 'ChannelError';
    this.failure = failure;
    this.retryAfterMs = options.retryAfterMs ?? null;
  }

  static isChannelError(error: unknown): error is ChannelError {
    return RosterError.isInstance(error) && typeof (error as { failure?: unknown }).failure === 'string' && error.code.startsWith('channel_');
  }
}
