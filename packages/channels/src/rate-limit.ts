/**
 * A per-sender rate limit: at most `limit` messages in any `windowMs`
 * (a sliding window of arrival times). Keeps only times, keyed by handle,
 * and forgets a sender once their window is empty.
 */
export class SenderRateLimit {
  private readonly arrivals = new Map<string, number[]>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`A rate limit lets at least one message through, got ${limit}.`);
  }

  /** Count a message from this sender; false when it is over the limit (and then it is not counted). */
  take(sender: string): boolean {
    const now = this.now();
    const recent = (this.arrivals.get(sender) ?? []).filter((time) => now - time < this.windowMs);
    if (recent.length >= this.limit) {
      this.arrivals.set(sender, recent);
      return false;
    }
    recent.push(now);
    this.arrivals.set(sender, recent);
    if (this.arrivals.size > 10_000) this.sweep(now);
    return true;
  }

  private sweep(now: number): void {
    for (const [sender, times] of this.arrivals) {
      if (times.every((time) => now - time >= this.windowMs)) this.arrivals.delete(sender);
    }
  }
}
