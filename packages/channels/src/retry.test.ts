import { describe, expect, it } from 'vitest';
import { ChannelError } from './errors.js';
import { retryRateLimited } from './retry.js';

describe('retryRateLimited', () => {
  it('waits as long as a 429 asks, then calls again', async () => {
    const calls: number[] = [];
    const result = await retryRateLimited(async () => {
      calls.push(Date.now());
      if (calls.length < 3) throw new ChannelError('rate-limited', 'wait', { retryAfterMs: 30 });
      return 'sent';
    });
    expect(result).toBe('sent');
    expect(calls).toHaveLength(3);
    expect(calls[2]! - calls[0]!).toBeGreaterThanOrEqual(55);
  });

  it('gives up after its attempts, and never retries an unreachable person or another failure', async () => {
    let calls = 0;
    const limited = retryRateLimited(
      async () => {
        calls += 1;
        throw new ChannelError('rate-limited', 'wait', { retryAfterMs: 1 });
      },
      { attempts: 2 },
    );
    await expect(limited).rejects.toMatchObject({ failure: 'rate-limited' });
    expect(calls).toBe(2);
    for (const failure of ['unreachable', 'failed'] as const) {
      calls = 0;
      await expect(
        retryRateLimited(async () => {
          calls += 1;
          throw new ChannelError(failure, 'no');
        }),
      ).rejects.toMatchObject({ failure });
      expect(calls).toBe(1);
    }
  });

  it('refuses a wait longer than it accepts, instead of hanging', async () => {
    await expect(
      retryRateLimited(
        async () => {
          throw new ChannelError('rate-limited', 'wait', { retryAfterMs: 60_000 });
        },
        { maxWaitMs: 1000 },
      ),
    ).rejects.toMatchObject({ failure: 'rate-limited' });
  });
});
