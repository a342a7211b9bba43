import { describe, expect, it } from 'vitest';
import { diversify, type Scored } from './diversify.js';
import type { Fact } from './types.js';

/** MMR as its definition reads: each round, every candidate left scored against every fact chosen so far. */
function definition(scored: Scored[], vectors: Map<string, Float32Array>, options: { limit: number; lambda: number; tokenBudget: number }) {
  const pool = scored.filter((item) => item.relevance > 0).sort((a, b) => b.relevance - a.relevance);
  const top = pool[0]?.relevance ?? 1;
  const chosen: Array<{ id: string; diversity: number }> = [];
  const picked: Float32Array[] = [];
  let tokens = 0;
  const dot = (a: Float32Array | undefined, b: Float32Array | undefined) => {
    if (a === undefined || b === undefined) return 0;
    let sum = 0;
    for (let index = 0; index < a.length; index += 1) if (a[index] !== 0) sum += a[index]! * b[index]!;
    return sum;
  };
  while (pool.length > 0 && chosen.length < options.limit) {
    const scores = pool.map((item) => options.lambda * (item.relevance / top) - (1 - options.lambda) * Math.max(0, ...picked.map((vector) => dot(vector, vectors.get(item.fact.id)))));
    const best = scores.indexOf(Math.max(...scores));
    const [item] = pool.splice(best, 1) as [Scored];
    const cost = Math.ceil((item.fact.content ?? '').length / 4) + 3;
    if (tokens + cost > options.tokenBudget) continue;
    tokens += cost;
    picked.push(vectors.get(item.fact.id)!);
    chosen.push({ id: item.fact.id, diversity: scores[best]! });
  }
  return chosen;
}

/** A seeded generator, so that a failure is the same each run. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

describe('diversify', () => {
  it('chooses what maximal marginal relevance chooses, in the same order, over many random pools', () => {
    const next = random(7);
    let rounds = 0;
    let budgetCuts = 0;
    for (let trial = 0; trial < 300; trial += 1) {
      const size = 1 + Math.floor(next() * 80);
      const vectors = new Map<string, Float32Array>();
      const scored: Scored[] = [];
      for (let index = 0; index < size; index += 1) {
        const id = `fact-${index}`;
        const vector = new Float32Array(32);
        // Sparse like a hashing vector, some near-duplicates of an earlier fact, and ties in relevance.
        const copy = index > 0 && next() < 0.2 ? vectors.get(`fact-${Math.floor(next() * index)}`) : undefined;
        for (let position = 0; position < vector.length; position += 1) vector[position] = copy !== undefined ? copy[position]! : next() < 0.3 ? next() - 0.5 : 0;
        vectors.set(id, vector);
        const relevance = next() < 0.1 ? 0 : Math.round(next() * 20) / 20;
        scored.push({
          fact: { id, content: 'x'.repeat(Math.floor(next() * 200)) } as Fact,
          fullText: null,
          vector: null,
          fused: relevance,
          trustWeight: 1,
          recencyWeight: 1,
          relevance,
          coverage: 0,
          similarity: null,
          relevant: true,
        });
      }
      const options = { limit: 1 + Math.floor(next() * 20), lambda: Math.round(next() * 4) / 4, tokenBudget: next() < 0.3 ? 50 + Math.floor(next() * 300) : 100_000 };
      const expected = definition(scored, vectors, options);
      const found = diversify(scored, vectors, options).map((result) => ({ id: result.fact.id, diversity: result.scores.diversity }));
      expect(found).toEqual(expected);
      rounds += expected.length;
      if (options.tokenBudget < 100_000 && expected.length < Math.min(options.limit, scored.filter((item) => item.relevance > 0).length)) budgetCuts += 1;
    }
    // The pools exercised what they were made for: many choices, and budgets that left candidates out.
    expect(rounds).toBeGreaterThan(1000);
    expect(budgetCuts).toBeGreaterThan(10);
  });
});
