import { isUuid, type Database, type Scope } from '@roster/db';
import type { Embedder } from '@roster/contracts';
import { fromSql } from 'pgvector';
import { factColumns, toFact, type FactRow } from './rows.js';
import { anyWordQuery, searchFacts, type ScopeSizeCache } from './search.js';
import { validateText } from './text.js';
import { readableTrust, type Fact } from './types.js';
import { isBelievedNow } from './versions.js';

/**
 * When a fact matches a request. Measured by `npm run bench -- match`
 * (docs/benchmarks.md, section "match") on hand-written related and unrelated
 * (request, fact) pairs: chosen on one half of them as the rule with the best
 * recall that lets at most one unrelated request in twenty find a fact, and
 * reported on the other half.
 */
export interface MatchRule {
  /**
   * The least score that matches: the mean of the share of the request's
   * content words that the fact holds and the cosine similarity of their
   * vectors. Neither alone was good enough: shared words take "where I live"
   * to "my sister lives in Lisbon", similarity alone misses plain restatements.
   */
  minScore: number;
  /**
   * Whether the embedder's similarity enters the score. Only where it was
   * measured: a neural model's cosines live on another scale than the
   * hashing embedder's, and a guessed threshold could let a destructive
   * action reach an unrelated fact.
   */
  useSimilarity: boolean;
  /**
   * The least word share that matches when there is no similarity (an
   * embedder never measured, down, or a fact not embedded yet).
   */
  minWordShare: number;
}

/** The hashing embedder's rule: mean of words and similarity ≥ 0.55; words alone ≥ 0.67. */
export const hashingMatchRule: MatchRule = { minScore: 0.55, useSimilarity: true, minWordShare: 0.67 };

/** The rule for an embedder model; models other than the hashing embedder match on shared words until measured. */
export function matchRule(model: string): MatchRule {
  return model.startsWith('hashing') ? hashingMatchRule : { ...hashingMatchRule, useSimilarity: false };
}

/**
 * Two matches whose scores are at most this far apart are too close to tell
 * apart: an action then asks which one instead of choosing. The largest
 * margin that cost no request its right action on the tuning half of
 * `npm run bench -- match`.
 */
export const matchTieMargin = 0.05;

/**
 * The matches too close to the best to tell apart from it, best first: one
 * when the best is clear, several when the person must say which, none when
 * nothing matched.
 */
export function closeMatches<T extends { score: number }>(matches: readonly T[], margin = matchTieMargin): T[] {
  const best = matches[0];
  if (best === undefined) return [];
  return matches.filter((match) => match.score >= best.score - margin);
}

export interface MatchOptions {
  /**
   * Consider only these facts: a tool checks that the fact a model named is
   * the one the person asked about. Without it, candidates come from both
   * search arms.
   */
  factIds?: readonly string[];
  /** How many candidates each search arm brings (default 40). */
  candidates?: number;
  /**
   * Replace the measured rule; a benchmark passes zeros to score every
   * candidate. The product never needs this.
   */
  rule?: Partial<MatchRule>;
  scopeSizes?: ScopeSizeCache;
}

/** Why a fact matched: it holds enough of the request's words, its vector is close enough, or both. */
export type MatchReason = 'words' | 'similarity';

/** A fact that matches a request, and the evidence. */
export interface FactMatch {
  fact: Fact;
  /** Which evidence the score rests on: shared words, the vectors' similarity, or both. */
  reasons: MatchReason[];
  /** The request's content words that the fact holds, as full-text search stems them. */
  sharedWords: string[];
  /** `sharedWords` ÷ the request's content words; 0 when the request has none. */
  wordShare: number;
  /** Cosine similarity of the request's and the fact's vectors; null when either has none. */
  similarity: number | null;
  /**
   * How strongly it matches, for ordering and for telling one clear match
   * from several close ones: the mean of `wordShare` and `similarity` where
   * the rule uses similarity, else `wordShare`.
   */
  score: number;
}

/**
 * The facts of a scope that genuinely match a request, best first; none when
 * nothing does. Search always returns its top results, related or not, which
 * is right for a prompt and wrong for "forget that …": every destructive
 * action asks this instead. Like search, it reads only what a read may
 * return, and reading is not a use.
 */
export async function matchFacts(database: Database, embedder: Embedder, scope: Scope, request: string, options: MatchOptions = {}): Promise<FactMatch[]> {
  const text = validateText(request, 'request');
  const rule: MatchRule = { ...matchRule(embedder.model), ...options.rule };
  const candidates = Math.min(Math.max(Math.trunc(options.candidates ?? 40), 1), 100);

  let requestVector: number[] | null = null;
  if (embedder.dimensions > 0) {
    try {
      [requestVector = null] = (await embedder.embed([text])) as [number[]?];
    } catch {
      // A remote embedder that is down leaves the words to decide.
      requestVector = null;
    }
  }

  let ids: string[] | null = options.factIds === undefined ? null : options.factIds.filter(isUuid);
  if (ids !== null && ids.length === 0) return [];
  if (ids === null && requestVector !== null) {
    const nearest = await searchFacts(database, embedder, scope, text, {
      mode: 'vector',
      limit: candidates,
      candidates,
      diversity: 1,
      tokenBudget: Number.MAX_SAFE_INTEGER,
      // Candidates only: the match rule decides, below.
      includeIrrelevant: true,
      ...(options.scopeSizes === undefined ? {} : { scopeSizes: options.scopeSizes }),
    }).catch(() => []);
    ids = nearest.map((result) => result.fact.id);
  }

  return database.withScope(scope, async (tx) => {
    const words = await tx.query<{ lexemes: string[] }>(`select tsvector_to_array(to_tsvector('english', $1)) as lexemes`, [text]);
    const requestWords = new Set(words.rows[0]?.lexemes ?? []);
    let candidateIds = ids ?? [];
    if (options.factIds === undefined) {
      const tsquery = anyWordQuery(text);
      if (tsquery !== null) {
        const fullText = await tx.query<{ id: string }>('select id from roster_search_full_text($1, $2)', [tsquery, candidates]);
        candidateIds = [...new Set([...candidateIds, ...fullText.rows.map((row) => row.id)])];
      }
    }
    if (candidateIds.length === 0) return [];

    const facts = await tx.query<FactRow & { lexemes: string[] }>(
      `select ${factColumns}, tsvector_to_array(f.search_vector) as lexemes from facts f where f.id = any($1)`,
      [candidateIds],
    );
    const vectors = new Map<string, number[]>();
    if (requestVector !== null && rule.useSimilarity) {
      const stored = await tx.query<{ fact_id: string; embedding: string }>(
        `select fact_id, embedding::text as embedding from fact_embeddings where model = $1 and fact_id = any($2)`,
        [embedder.model, candidateIds],
      );
      for (const row of stored.rows) vectors.set(row.fact_id, fromSql(row.embedding) as number[]);
    }

    const now = new Date();
    const matches: FactMatch[] = [];
    for (const row of facts.rows) {
      const fact = toFact(row);
      if (!readableTrust.includes(fact.trust) || !isBelievedNow(fact, now)) continue;
      const sharedWords = row.lexemes.filter((lexeme) => requestWords.has(lexeme)).sort();
      const wordShare = requestWords.size === 0 ? 0 : sharedWords.length / requestWords.size;
      const vector = vectors.get(fact.id);
      const similarity = requestVector === null || vector === undefined ? null : cosine(requestVector, vector);
      const withSimilarity = rule.useSimilarity && similarity !== null;
      const score = withSimilarity ? (wordShare + similarity) / 2 : wordShare;
      if (score < (withSimilarity ? rule.minScore : rule.minWordShare)) continue;
      const reasons: MatchReason[] = [];
      if (sharedWords.length > 0) reasons.push('words');
      if (withSimilarity) reasons.push('similarity');
      matches.push({ fact, reasons, sharedWords, wordShare, similarity, score });
    }
    return matches.sort((a, b) => b.score - a.score || b.fact.recordedAt.getTime() - a.fact.recordedAt.getTime());
  });
}

/** Cosine similarity; stored and fresh vectors may not both be normalised, so it divides by the norms. */
function cosine(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) return 0;
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let index = 0; index < a.length; index += 1) {
    dot += a[index]! * b[index]!;
    normA += a[index]! * a[index]!;
    normB += b[index]! * b[index]!;
  }
  return normA === 0 || normB === 0 ? 0 : dot / Math.sqrt(normA * normB);
}
