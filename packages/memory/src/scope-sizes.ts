import type { Scope } from '@roster/db';

/**
 * From this many facts on, a scope's count for BM25 (its N) is kept for a few
 * minutes rather than counted on each search: counting is a pass over the
 * scope, and a few facts more or less do not move the weights of a scope this
 * large. Smaller scopes are counted each time, so their scores are exact.
 */
export const keptFactCountFrom = 1000;

/** Scope sizes, counted once and kept for a few minutes. */
export class ScopeSizeCache {
  /** `atLeast`: the count stopped at a limit, so the scope holds that many or more. */
  private readonly sizes = new Map<string, { count: number; atLeast: boolean; until: number }>();
  constructor(private readonly ttlMs = 5 * 60_000) {}

  static key(scope: Scope, model: string): string {
    return `${scope.agentId}|${scope.personId ?? ''}|${scope.audience}|${model}`;
  }

  /** The key of the planner's estimate of all stored vectors' rows, whatever their scope. */
  static tableKey(model: string): string {
    return `table|${model}`;
  }

  /** The key of the scope's count of facts (BM25's N), apart from any model's count of vectors. */
  static factsKey(scope: Scope): string {
    return `facts|${scope.agentId}|${scope.personId ?? ''}|${scope.audience}`;
  }

  /** The scope's size if known well enough to compare with `threshold`. */
  get(key: string, threshold: number): number | undefined {
    const entry = this.sizes.get(key);
    if (entry === undefined || entry.until < Date.now()) return undefined;
    if (entry.atLeast && entry.count <= threshold) return undefined;
    return entry.count;
  }

  set(key: string, count: number, atLeast: boolean): void {
    if (this.sizes.size > 10_000) this.sizes.clear();
    this.sizes.set(key, { count, atLeast, until: Date.now() + this.ttlMs });
  }
}
