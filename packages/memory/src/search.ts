import type { Database, Scope, ScopedTransaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import type { Embedder } from '@roster/contracts';
import { toFact } from './rows.js';
import { keptFactCountFrom, ScopeSizeCache } from './scope-sizes.js';
import { parseSearchSource, searchSource, type SearchRow } from './search-statement.js';

export { keptFactCountFrom, ScopeSizeCache } from './scope-sizes.js';
import { diversify } from './diversify.js';
import { validateText } from './text.js';
import { readableTrust, type SearchResult, type Trust } from './types.js';
import { isBelievedNow } from './versions.js';
import { clears, relevanceFloor, weightsOf, type RelevanceFloor } from './relevance.js';

export interface SearchOptions {
  /** How many results at most (default 10). */
  limit?: number;
  /** Results stop before their estimated tokens exceed this (default 2,000). */
  tokenBudget?: number;
  /** `hybrid` (default) fuses both arms; the others run one arm, for measurement. */
  mode?: 'hybrid' | 'full-text' | 'vector';
  /**
   * How many candidates each arm brings (default max(2 × limit, 40): on
   * LoCoMo, 4 × limit found the same at a third more time, docs/benchmarks.md).
   */
  candidates?: number;
  /** MMR trade-off between relevance (1) and diversity (0); default 0.75. */
  diversity?: number;
  /**
   * Scopes with at most this many vectors are searched exactly (a scan of the
   * scope, perfect recall); larger ones through HNSW with iterative scans.
   * Unset, search chooses: exactly up to 10,000 vectors, unless the scope holds
   * so large a share of all vectors that the graph, which filters what it
   * walks, finds its neighbours sooner than a scan would (`prefersGraph`).
   */
  exactBelow?: number;
  /** Remembers how many vectors a scope holds, so that the count is not paid on every search. */
  scopeSizes?: ScopeSizeCache;
  /** The moment recency is measured from (default now). */
  now?: Date;
  /**
   * How much each arm's reciprocal rank counts in the fusion (defaults:
   * full text 1, vector `defaultVectorWeight(model)`).
   */
  weights?: { fullText?: number; vector?: number };
  /**
   * The share of a full-text match's score lent to the facts of the scope
   * recorded just before and after it (default 0.5; 0 turns it off); the
   * next fact on each side borrows the share squared.
   */
  neighbours?: number;
  /**
   * Return results below the relevance floor too, marked `relevant: false`
   * (default false: search returns only what clears the floor). For
   * measurement; nothing that answers a person reads below the floor.
   */
  includeIrrelevant?: boolean;
  /** Replace the floor of the embedder's model (`relevanceFloor`, relevance.ts); for measurement. */
  floor?: Partial<RelevanceFloor>;
  /**
   * The query's vector, from `embedQuery` before a transaction opened (null:
   * the embedder failed, full text alone); unset, search computes it.
   */
  queryVector?: number[] | null;
}

/** A query's vector, with no retries: a person is waiting, and full text answers without the vector arm. */
async function embedText(embedder: Embedder, text: string): Promise<number[] | null> {
  const [vector = null] = (await embedder.embed([text], { maxRetries: 0 })) as [number[]?];
  return vector;
}

/** The query's vector as search computes it, null when the embedder fails. */
export async function embedQuery(embedder: Embedder, query: string): Promise<number[] | null> {
  const text = validateText(query, 'query');
  try {
    return await embedText(embedder, text);
  } catch {
    // A remote embedder that is down leaves full-text search working.
    return null;
  }
}

/**
 * What a fact recorded next to a strong full-text match borrows of its score.
 * Facts said one after the other often answer one another; chosen on LoCoMo
 * conversations 1–3 among 0.1, 0.2, 0.3, 0.5, 0.7 and 1, reported on
 * conversations 4–7 (docs/benchmarks.md).
 */
export const neighbourWeight = 0.5;

/**
 * The vector arm's vote against the full-text arm's, for the hashing
 * embedder. Its vectors mostly repeat the words full text already matched,
 * and an equal vote let its weaker ranking push good full-text hits out:
 * chosen on LoCoMo conversations 1–3 among 0.1, 0.25, 0.5, 0.75 and 1 once
 * full text ranked by BM25 with neighbours, reported on conversations 4–7
 * (docs/benchmarks.md). Other embedders get an equal vote, the usual
 * reciprocal-rank fusion, until measured.
 */
export const hashingVectorWeight = 0.1;

/** The vector arm's default vote for an embedder model. */
export function defaultVectorWeight(model: string): number {
  return model.startsWith('hashing') ? hashingVectorWeight : 1;
}

/** Scopes of at most this many vectors are scanned exactly, unless `prefersGraph` says otherwise. */
const defaultExactBelow = 10_000;

/**
 * Whether the graph finds a scope's nearest vectors sooner than a scan of the
 * scope. A scan costs each of the scope's vectors (about 1 µs a row on the
 * embedded database); the graph walks about the same few hundred nodes
 * whatever the table's size, but filters them after the walk, so it walks as
 * many times more as the scope is a smaller share of the table (iterative
 * scans). Measured on the embedded database at 10,000 facts: a scope of all
 * of them takes the graph 2 ms against 11 ms for the scan, a tenth of them 20
 * against 7 (docs/benchmarks.md, turns and retrieval). The graph wins roughly
 * when size × share > 2,000 (so never for a scope of 2,000 vectors or fewer).
 * `tableRows` is the planner's estimate (-1 before the table was first
 * analyzed: then the size alone decides, as before).
 */
function prefersGraph(size: number, tableRows: number): boolean {
  if (!(tableRows > 0)) return false;
  return size * Math.min(1, size / tableRows) > graphWork;
}

/** Size × share of the table above which the graph is sooner than a scan (see `prefersGraph`). */
const graphWork = 2_000;

/** The vector arm asks the graph for at least this many neighbours: fewer stops the scan too early. */
const minimumGraphCandidates = 100;

/** Reciprocal-rank fusion constant (the usual 60). */
const rrfK = 60;
const trustWeights: Partial<Record<Trust, number>> = { verified: 1.2, active: 1, candidate: 0.75 };
/** At most +15% for a fact recorded today, fading over about a month. */
const recencyBoost = 0.15;
const recencyDays = 30;

/** Postgres full-text query matching any of the words, as people expect of a search box. */
export function anyWordQuery(text: string): string | null {
  const words = [...new Set(text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((word) => word.length > 0))].slice(0, 64);
  if (words.length === 0) return null;
  return words.map((word) => `'${word}'`).join(' | ');
}

/**
 * A search made ready before its transaction opens: the query's vector
 * computed, the vector arm's way chosen (a scan or the graph) where the
 * scope's size is known. `prepare` counts the scope when it is not (one more
 * statement, then kept for a few minutes), `source` is what the one statement
 * that reads everything reads from (search-statement.ts: one row, of the
 * columns `search` and `vectors`), `finish` ranks that row.
 */
export interface SearchRead {
  /** Settings the statement's transaction opens with (the graph's), or none. */
  readonly settings: Record<string, string> | undefined;
  prepare(tx: ScopedTransaction): Promise<void>;
  source(first: number): { sql: string; params: unknown[] };
  finish(row: SearchRow): SearchResult[];
}

/**
 * Hybrid retrieval inside one scope: full-text and vector arms, fused by
 * reciprocal rank, weighted by trust and a bounded recency prior, diversified
 * by MMR, cut to a token budget. Reading is not a use: nothing here changes
 * `uses` or `last_used_at`. One statement in one scoped transaction.
 */
export async function searchFacts(database: Database, embedder: Embedder, scope: Scope, query: string, options: SearchOptions = {}): Promise<SearchResult[]> {
  const read = await prepareSearch(embedder, scope, query, options);
  return database.withScope(
    scope,
    async (tx) => {
      await read.prepare(tx);
      const { sql, params } = read.source(1);
      const { rows } = await tx.query<SearchRow>(`select s.search, s.vectors from ${sql} s`, params);
      return read.finish(rows[0]!);
    },
    read.settings === undefined ? undefined : { settings: read.settings },
  );
}

/** The settings under which HNSW walks the graph for a scope: iterative scans, and no sort of the scope instead. */
function graphSettings(candidates: number): Record<string, string> {
  // jit off: a sort the statement cannot do without is still charged `enable_sort = off`'s penalty before Postgres 18,
  // and a plan that costs that much is compiled first (about 400 ms on a server Postgres 15, for a 10 ms search).
  return { 'hnsw.iterative_scan': 'relaxed_order', 'hnsw.ef_search': String(Math.min(Math.max(candidates, minimumGraphCandidates), 1000)), enable_sort: 'off', jit: 'off' };
}

/** See `SearchRead`. */
export async function prepareSearch(embedder: Embedder, scope: Scope, query: string, options: SearchOptions = {}): Promise<SearchRead> {
  const text = validateText(query, 'query');
  const limit = clamp(options.limit ?? 10, 1, 100);
  const candidates = clamp(options.candidates ?? Math.max(limit * 2, 40), limit, 1000);
  const mode = options.mode ?? 'hybrid';
  const tokenBudget = options.tokenBudget ?? 2000;
  const lambda = options.diversity ?? 0.75;
  const now = options.now ?? new Date();
  const fullTextWeight = options.weights?.fullText ?? 1;
  const vectorWeight = options.weights?.vector ?? defaultVectorWeight(embedder.model);
  const sizes = options.scopeSizes;
  const share = clampShare(options.neighbours ?? neighbourWeight);

  let queryVector: number[] | null = null;
  if (mode !== 'full-text' && options.queryVector !== undefined) queryVector = options.queryVector;
  else if (mode !== 'full-text') {
    try {
      queryVector = await embedText(embedder, text);
    } catch (error) {
      // A remote embedder that is down leaves full-text search working.
      if (mode === 'vector') throw error;
      queryVector = null;
    }
  }
  if (queryVector !== null && (queryVector.length !== embedder.dimensions || queryVector.length === 0)) {
    throw new RosterError('embedder_bad_response', `The query vector has ${queryVector.length} dimensions; the model ${embedder.model} stores ${embedder.dimensions}.`);
  }

  const factsKey = ScopeSizeCache.factsKey(scope);
  const knownFacts = sizes?.get(factsKey, keptFactCountFrom);
  const exactLimit = options.exactBelow ?? defaultExactBelow;
  const sizeKey = ScopeSizeCache.key(scope, embedder.model);
  const tableKey = ScopeSizeCache.tableKey(embedder.model);
  /** Whether the vector arm scans the scope exactly; undefined until the scope's size is known. */
  const decide = (size: number, table: number) => size <= exactLimit && !(options.exactBelow === undefined && prefersGraph(size, table));
  let exact: boolean | undefined;
  if (queryVector !== null) {
    const size = sizes?.get(sizeKey, exactLimit);
    const table = sizes?.get(tableKey, 0);
    if (size !== undefined && table !== undefined) exact = decide(size, table);
  }

  return {
    settings: exact === false ? graphSettings(candidates) : undefined,

    async prepare(tx) {
      if (queryVector === null || exact !== undefined) return;
      // The scope's vectors (row-level security keeps the count to the scope), up to the limit; and
      // the planner's estimate of the whole table's rows, which any role may read in the catalog.
      const counted = await tx.query<{ count: string; table_rows: number }>(
        `select (select count(*) from (select 1 from fact_embeddings fe where fe.model = $1 and fe.searchable limit $2) s) as count,
                (select reltuples from pg_class where oid = 'fact_embeddings'::regclass) as table_rows`,
        [embedder.model, exactLimit + 1],
      );
      const size = Number(counted.rows[0]?.count ?? 0);
      const table = Number(counted.rows[0]?.table_rows ?? -1);
      sizes?.set(sizeKey, size, size > exactLimit);
      sizes?.set(tableKey, table, false);
      exact = decide(size, table);
      if (!exact) {
        const settings = Object.entries(graphSettings(candidates));
        await tx.query(`select ${settings.map((_, index) => `set_config($${index * 2 + 1}, $${index * 2 + 2}, true)`).join(', ')}`, settings.flat());
      }
    },

    source(first) {
      return searchSource(
        {
          fullText: mode === 'vector' || anyWordQuery(text) === null ? null : { candidates, neighbours: share },
          vector:
            queryVector === null
              ? null
              : { values: queryVector, model: embedder.model, candidates, exact: exact !== false, ...(exact === false ? { walk: Math.max(candidates, minimumGraphCandidates) } : {}) },
          text,
          knownFacts: knownFacts ?? null,
          vectorsOf: embedder.dimensions > 0 ? embedder.model : null,
        },
        first,
      );
    },

    finish(row) {
      const source = parseSearchSource(row);
      if (knownFacts === undefined && source.scopeFacts !== null && source.scopeFacts >= keptFactCountFrom) sizes?.set(factsKey, source.scopeFacts, false);
      if (source.fullText.length === 0 && source.vector.length === 0) return [];
      const weights = weightsOf(source.terms);
      const fullTextById = new Map(source.fullText.map((hit) => [hit.id, hit]));
      const vectorById = new Map(source.vector.map((hit) => [hit.id, hit]));
      const floor: RelevanceFloor = { ...relevanceFloor(embedder.model), ...options.floor };
      const readable = source.facts.filter((row) => {
        const fact = toFact(row);
        return readableTrust.includes(fact.trust) && isBelievedNow(fact, now);
      });
      const scored = readable.map((row) => {
        const fact = toFact(row);
        const ft = fullTextById.get(fact.id);
        const vec = vectorById.get(fact.id);
        const fused = (ft === undefined ? 0 : fullTextWeight / (rrfK + ft.rank)) + (vec === undefined ? 0 : vectorWeight / (rrfK + vec.rank));
        const trustWeight = trustWeights[fact.trust] ?? 0;
        const ageDays = Math.max(0, (now.getTime() - fact.recordedAt.getTime()) / 86_400_000);
        const recencyWeight = 1 + recencyBoost * Math.exp(-ageDays / recencyDays);
        const coverage = weights.coverage(row.lexemes);
        const similarity = vec === undefined ? null : 1 - vec.value;
        return {
          fact,
          fullText: ft === undefined ? null : { rank: ft.rank, score: ft.value },
          vector: vec === undefined ? null : { rank: vec.rank, distance: vec.value },
          fused,
          trustWeight,
          recencyWeight,
          relevance: fused * trustWeight * recencyWeight,
          coverage,
          similarity,
          relevant: false,
        };
      });
      // Nothing is relevant to a query about something never said; else each result that holds enough of it is.
      const asked = scored.some((item) => clears(floor, floor.minCoverage, item.coverage, item.similarity));
      for (const item of scored) item.relevant = asked && clears(floor, floor.minShare, item.coverage, item.similarity);
      // A fact recorded next to a relevant full-text match borrowed its score from it (see `neighbours`):
      // it is relevant as its match is. What it borrowed is the share of one match's own score.
      const lenders = scored.filter((item) => item.relevant && (fullTextById.get(item.fact.id)?.own ?? 0) > 0).map((item) => share * fullTextById.get(item.fact.id)!.own);
      for (const item of floor.neighbours ? scored : []) {
        const hit = fullTextById.get(item.fact.id);
        if (item.relevant || hit === undefined) continue;
        const borrowed = hit.value - hit.own;
        if (borrowed > 0 && lenders.some((lent) => Math.abs(lent - borrowed) <= 1e-3 * Math.max(1, lent))) item.relevant = true;
      }
      const kept = options.includeIrrelevant === true ? scored : scored.filter((item) => item.relevant);
      return diversify(kept, source.vectors, { limit, lambda, tokenBudget });
    },
  };
}


function clampShare(value: number): number {
  return Number.isFinite(value) ? Math.min(Math.max(value, 0), 1) : neighbourWeight;
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(Math.max(Math.trunc(value), min), max);
}
