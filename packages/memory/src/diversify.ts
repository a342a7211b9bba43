// Maximal marginal relevance over a search's candidates, then its token budget (search.ts scores them).
import type { Fact, SearchResult } from './types.js';

/** About four characters to a token, and a few for the line around a fact. */
function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4) + 3;
}

export interface Scored {
  fact: Fact;
  fullText: SearchResult['scores']['fullText'];
  vector: SearchResult['scores']['vector'];
  fused: number;
  trustWeight: number;
  recencyWeight: number;
  relevance: number;
  coverage: number;
  similarity: number | null;
  relevant: boolean;
}

/** Maximal marginal relevance over the stored vectors, then the token budget. */
export function diversify(scored: Scored[], vectors: Map<string, number[]>, options: { limit: number; lambda: number; tokenBudget: number }): SearchResult[] {
  const pool = scored.filter((item) => item.relevance > 0).sort((a, b) => b.relevance - a.relevance);
  const top = pool[0]?.relevance ?? 1;
  const chosen: SearchResult[] = [];
  // Each candidate's greatest similarity to the facts chosen so far, brought up to date with each new choice.
  const nearest = new Map<Scored, number>(pool.map((item) => [item, 0]));
  let tokens = 0;
  while (pool.length > 0 && chosen.length < options.limit) {
    let bestIndex = 0;
    let bestScore = -Infinity;
    pool.forEach((item, index) => {
      const score = options.lambda * (item.relevance / top) - (1 - options.lambda) * nearest.get(item)!;
      if (score > bestScore) {
        bestScore = score;
        bestIndex = index;
      }
    });
    const [item] = pool.splice(bestIndex, 1) as [Scored];
    const cost = estimateTokens(item.fact.content ?? '');
    if (tokens + cost > options.tokenBudget) continue;
    tokens += cost;
    const vector = vectors.get(item.fact.id);
    const nonZero = nonZeroOf(vector);
    for (const other of pool) nearest.set(other, Math.max(nearest.get(other)!, cosine(vector, vectors.get(other.fact.id), nonZero)));
    chosen.push({
      fact: item.fact,
      tokens: cost,
      scores: {
        fullText: item.fullText,
        vector: item.vector,
        fused: item.fused,
        trustWeight: item.trustWeight,
        recencyWeight: item.recencyWeight,
        relevance: item.relevance,
        diversity: bestScore,
        coverage: item.coverage,
        similarity: item.similarity,
      },
      relevant: item.relevant,
    });
  }
  return chosen;
}

/**
 * The dot product of `a` (its positions that are not zero, `nonZero`) and
 * `b`: a term whose factor in `a` is zero adds nothing, so the sum is the
 * full one, to the last bit.
 */
function cosine(a: number[] | undefined, b: number[] | undefined, nonZero: readonly number[]): number {
  if (a === undefined || b === undefined || a.length !== b.length) return 0;
  let dot = 0;
  for (const index of nonZero) dot += a[index]! * b[index]!;
  return dot;
}

/** The positions of a vector that are not zero (a hashing vector has a few dozen of its 256), in order. */
function nonZeroOf(vector: readonly number[] | undefined): number[] {
  const positions: number[] = [];
  for (let index = 0; index < (vector?.length ?? 0); index += 1) if (vector![index] !== 0) positions.push(index);
  return positions;
}
