import { ChannelError } from './errors.js';

export interface RetryOptions {
  /** Tries in all, the first included (default 4). */
  attempts?: number;
  /** The longest wait a platform may ask for before we give up instead (default 5 minutes). */
  maxWaitMs?: number;
  signal?: AbortSignal;
  /** Told before each wait, for the logs. */
  onWait?: (waitMs: number, attempt: number) => void;
}

/**
 * Call a platform, and when it answers 429 (a `rate-limited` ChannelError),
 * wait as long as it asked and call again. Other failures are thrown at once:
 * an unreachable person stays unreachable, and a send that failed otherwise
 * may have been delivered.
 */
export async function retryRateLimited<T>(call: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const attempts = options.attempts ?? 4;
  const maxWaitMs = options.maxWaitMs ?? 5 * 60_000;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await call();
    } catch (error) {
      if (!ChannelError.isChannelError(error) || error.failure !== 'rate-limited' || attempt >= attempts) throw error;
      const waitMs = Math.max(error.retryAfterMs ?? 1000, 0);
      if (waitMs > maxWaitMs) throw error;
      options.onWait?.(waitMs, attempt);
      await sleep(waitMs, options.signal);
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(new ChannelError('failed', 'The channel stopped while waiting to send again.'));
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(new ChannelError('failed', 'The channel stopped while waiting to send again.'));
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}
