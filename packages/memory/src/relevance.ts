/**
 * When a search result is relevant to the query, rather than the best of
 * nothing. Measured by `npm run bench -- never-said` (docs/benchmarks.md) on
 * the development half of a labelled set of questions about things said and
 * never said, beside LoCoMo R@10 with and without it, and reported on the
 * held-out halves. No floor tried kept LoCoMo R@10 within 0.02 while saying
 * "nothing relevant" to most never-said questions; the benchmark says which
 * was kept and why.
 */
export interface RelevanceFloor {
  /**
   * Whether the query is about anything remembered at all: the best result
   * must hold at least this share of the query's weight, or nothing is
   * relevant. Each query word weighs its idf in the scope (a word no fact
   * holds weighs the most), and a result holds the weight of the query words
   * it contains. A fact sharing only "favourite" with "what is my favourite
   * colour?" holds less than half of it; one that answers holds nearly all.
   */
  minCoverage: number;
  /**
   * When the query passes, the least share each result must hold to be
   * relevant beside the best (a turn sharing the rare word of a question is
   * often its evidence, though it holds little of a long question's weight).
   */
  minShare: number;
  /**
   * The least cosine similarity of the query's and the result's vectors that
   * makes a result relevant on its own, whatever its words; null: similarity
   * alone never does. Cosines of different embedders live on different
   * scales, so only a measured embedder has one.
   */
  minSimilarity: number | null;
  /**
   * Whether a fact lent a share of a relevant neighbour's full-text score
   * (see `neighbours`) is relevant as its neighbour is. It helps ranking in a
   * conversation's turns; in a person's separate facts it lets the fact said
   * after "my favourite colour is teal" answer a question about colour.
   */
  neighbours: boolean;
}

/** The hashing embedder's floor: held out, 0.92 of never-said questions get nothing, at 0.18 of LoCoMo R@10 (docs/benchmarks.md, never-said). */
export const hashingRelevanceFloor: RelevanceFloor = { minCoverage: 0.5, minShare: 0.01, minSimilarity: null, neighbours: false };

/**
 * The floor for an embedder model. The coverage of the query's words does not
 * depend on the embedder, so every model shares it; similarity counts only
 * for the hashing embedder, the one measured. Another embedder's vector arm
 * still ranks, but makes nothing relevant on its own until measured the same
 * way (`npm run bench -- never-said --embedder=…`).
 */
export function relevanceFloor(model: string): RelevanceFloor {
  return model.startsWith('hashing') ? hashingRelevanceFloor : { ...hashingRelevanceFloor, minSimilarity: null };
}

/** Whether a result clears the floor: enough of the query's weight, or (where measured) a close enough vector. */
export function clears(floor: RelevanceFloor, minCoverage: number, coverage: number, similarity: number | null): boolean {
  if (coverage >= minCoverage && coverage > 0) return true;
  return floor.minSimilarity !== null && similarity !== null && similarity >= floor.minSimilarity;
}

/** Each query word's weight in the scope: BM25's idf, from the counts of roster_search_words (0033) or roster_query_terms (0029). */
export interface QueryWeights {
  /** The share of the query's weight that a fact holding these words holds, 0 to 1. */
  coverage(lexemes: readonly string[]): number;
}

/** Stemmed words that ask rather than say what is asked about. */
const askingWords: ReadonlySet<string> = new Set(['know', 'rememb', 'tell', 'remind', 'recal']);

/** The weights of a query's words from the word rows of roster_search_words (0033) or roster_query_terms (0029): each word's lexeme, its count in the scope and the scope's N. */
export function weightsOf(rows: ReadonlyArray<{ lexeme: string; df: number; scopeFacts: number }>): QueryWeights {
  const weight = new Map<string, number>();
  // "What do you know about …", "tell me …": the words that ask weigh nothing, unless nothing else is asked.
  const asking = rows.every((row) => askingWords.has(row.lexeme)) ? new Set<string>() : askingWords;
  for (const row of rows) {
    if (asking.has(row.lexeme)) continue;
    const df = row.df;
    const n = Math.max(row.scopeFacts, df);
    weight.set(row.lexeme, Math.log(1 + (n - df + 0.5) / (df + 0.5)));
  }
  let total = 0;
  for (const value of weight.values()) total += value;
  return {
    coverage(lexemes) {
      if (total <= 0) return 0;
      let held = 0;
      for (const lexeme of new Set(lexemes)) held += weight.get(lexeme) ?? 0;
      return held / total;
    },
  };
}
