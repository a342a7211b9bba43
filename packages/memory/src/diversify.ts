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
export function diversify(scored: Scored[], vectors: Map<string, Float32Array>, options: { limit: number; lambda: number; tokenBudget: number }): SearchResult[] {
  const pool = scored.filter((item) => item.relevance > 0).sort((a, b) => b.relevance - a.relevance);
  const top = pool[0]?.relevance ?? 1;
  const chosen: SearchResult[] = [];
  const pooled = pool.map((item) => vectors.get(item.fact.id));
  // Each candidate's greatest similarity to the facts chosen so far, and how many of them it was compared with:
  // a candidate's score only falls as facts are chosen, so one whose score, compared with fewer, is still below
  // the best need not be compared with the rest (lazy greedy: the same choices as comparing every one each time).
  const taken = new Uint8Array(pool.length);
  const nearest = new Float64Array(pool.length);
  const compared = new Uint32Array(pool.length);
  const chosenVectors: Array<{ vector: Float32Array | undefined; nonZero: number[] }> = [];
  const scoreOf = (index: number) => options.lambda * (pool[index]!.relevance / top) - (1 - options.lambda) * nearest[index]!;
  let left = pool.length;
  let tokens = 0;
  while (left > 0 && chosen.length < options.limit) {
    let bestIndex = -1;
    let bestScore = -Infinity;
    for (;;) {
      bestIndex = -1;
      bestScore = -Infinity;
      for (let index = 0; index < pool.length; index += 1) {
        if (taken[index] === 1) continue;
        const score = scoreOf(index);
        if (bestIndex === -1 || score > bestScore) {
          bestScore = score;
          bestIndex = index;
        }
      }
      if (compared[bestIndex] === chosenVectors.length) break;
      for (let next = compared[bestIndex]!; next < chosenVectors.length; next += 1) {
        const { vector, nonZero } = chosenVectors[next]!;
        nearest[bestIndex] = Math.max(nearest[bestIndex]!, cosine(vector, pooled[bestIndex], nonZero));
      }
      compared[bestIndex] = chosenVectors.length;
    }
    const item = pool[bestIndex]!;
    taken[bestIndex] = 1;
    left -= 1;
    const cost = estimateTokens(item.fact.content ?? '');
    if (tokens + cost > options.tokenBudget) continue;
    tokens += cost;
    const vector = pooled[bestIndex];
    chosenVectors.push({ vector, nonZero: nonZeroOf(vector) });
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
function cosine(a: Float32Array | undefined, b: Float32Array | undefined, nonZero: readonly number[]): number {
  if (a === undefined || b === undefined || a.length !== b.length) return 0;
  let dot = 0;
  for (const index of nonZero) dot += a[index]! * b[index]!;
  return dot;
}

/** The positions of a vector that are not zero (a hashing vector has a few dozen of its 256), in order. */
function nonZeroOf(vector: Float32Array | undefined): number[] {
  const positions: number[] = [];
  for (let index = 0; index < (vector?.length ?? 0); index += 1) if (vector![index] !== 0) positions.push(index);
  return positions;
}
