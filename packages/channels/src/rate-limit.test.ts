import { describe, expect, it } from 'vitest';
import { RecentDeliveries } from './dedupe.js';
import { SenderRateLimit } from './rate-limit.js';

describe('SenderRateLimit', () => {
  it('lets a sender through up to the limit in a window, others apart, and again once the window has passed', () => {
    let now = 0;
    const limit = new SenderRateLimit(2, 1000, () => now);
    expect([limit.take('ada'), limit.take('ada'), limit.take('ada')]).toEqual([true, true, false]);
    expect(limit.take('bob')).toBe(true);
    now = 999;
    expect(limit.take('ada')).toBe(false);
    now = 1000;
    expect(limit.take('ada')).toBe(true);
  });
});

describe('RecentDeliveries', () => {
  it('knows a delivery id the second time, forgets it after its time, and keeps at most its capacity', () => {
    let now = 0;
    const seen = new RecentDeliveries(2, 1000, () => now);
    expect([seen.first('a'), seen.first('a'), seen.first('b')]).toEqual([true, false, true]);
    now = 1000;
    expect(seen.first('a')).toBe(true);
    seen.first('c');
    // Capacity 2: the oldest ('b') went when 'c' came.
    expect(seen.first('b')).toBe(true);
  });
});
