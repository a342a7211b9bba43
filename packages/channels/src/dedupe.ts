/**
 * The deliveries seen lately, so that a platform's redelivery (Telegram after
 * a lost offset, Slack's retries) is handled once even where the core keeps
 * nothing to compare with (a stranger's message is never stored). The core's
 * own check (one stored message per platform message id) stays the guarantee
 * across restarts; this one is in memory and bounded.
 */
export class RecentDeliveries {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly capacity = 10_000,
    private readonly ttlMs = 60 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** True the first time a delivery id is seen (within the time kept); false for a redelivery. */
  first(deliveryId: string): boolean {
    const now = this.now();
    const at = this.seen.get(deliveryId);
    if (at !== undefined && now - at < this.ttlMs) return false;
    this.seen.delete(deliveryId);
    this.seen.set(deliveryId, now);
    // A Map keeps insertion order: the oldest go first.
    while (this.seen.size > this.capacity) this.seen.delete(this.seen.keys().next().value!);
    return true;
  }
}
