import type { Database, Scope, ScopedTransaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { fromSql, toSql } from 'pgvector';
import type { Embedder } from './embedders/index.js';
import { vectorExpression } from './embeddings.js';
import { factColumns, toFact, type FactRow } from './rows.js';
import { validateText } from './text.js';
import { readableTrust, type SearchResult, type Trust } from './types.js';
import { isBelievedNow } from './versions.js';
import { diversify } from './diversify.js';
import { clears, queryWeights, relevanceFloor, type RelevanceFloor } from './relevance.js';

export interface SearchOptions {
  /** How many results at most (default 10). */
  limit?: number;
  /** Results stop before their estimated tokens exceed this (default 2,000). */
  tokenBudget?: number;
  /** `hybrid` (default) fuses both arms; the others run one arm, for measurement. */
  mode?: 'hybrid' | 'full-text' | 'vector';
  /** How many candidates each arm brings (default max(4 × limit, 40)). */
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
   * recorded just before and after it (default 0.5; 0 turns it off).
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

interface ArmHit {
  id: string;
  rank: number;
  value: number;
  /** Full text: the fact's own BM25 score, without what it borrowed from a neighbour. */
  own: number;
}

/**
 * Hybrid retrieval inside one scope: full-text and vector arms, fused by
 * reciprocal rank, weighted by trust and a bounded recency prior, diversified
 * by MMR, cut to a token budget. Reading is not a use: nothing here changes
 * `uses` or `last_used_at`.
 */
export async function searchFacts(database: Database, embedder: Embedder, scope: Scope, query: string, options: SearchOptions = {}): Promise<SearchResult[]> {
  const text = validateText(query, 'query');
  const limit = clamp(options.limit ?? 10, 1, 100);
  const candidates = clamp(options.candidates ?? Math.max(limit * 4, 40), limit, 1000);
  const mode = options.mode ?? 'hybrid';
  const tokenBudget = options.tokenBudget ?? 2000;
  const lambda = options.diversity ?? 0.75;
  const now = options.now ?? new Date();
  const fullTextWeight = options.weights?.fullText ?? 1;
  const vectorWeight = options.weights?.vector ?? defaultVectorWeight(embedder.model);

  let queryVector: number[] | null = null;
  if (mode !== 'full-text') {
    try {
      // No retries: a person is waiting, and full text answers without the vector arm.
      [queryVector = null] = (await embedder.embed([text], { maxRetries: 0 })) as [number[]?];
    } catch (error) {
      // A remote embedder that is down leaves full-text search working.
      if (mode === 'vector') throw error;
      queryVector = null;
    }
  }

  return database.withScope(scope, async (tx) => {
    const fullText = mode === 'vector' ? [] : await fullTextArm(tx, text, candidates, clampShare(options.neighbours ?? neighbourWeight), options.scopeSizes);
    const vector =
      queryVector === null ? [] : await vectorArm(tx, embedder, queryVector, candidates, options.exactBelow, options.scopeSizes);
    const ids = [...new Set([...fullText, ...vector].map((hit) => hit.id))];
    if (ids.length === 0) return [];

    const facts = await tx.query<FactRow & { lexemes: string[] }>(
      `select ${factColumns}, tsvector_to_array(f.search_vector) as lexemes from facts f where f.id = any($1)`,
      [ids],
    );
    const weights = await queryWeights(tx, text, options.scopeSizes);
    const vectors = new Map<string, number[]>();
    if (embedder.dimensions > 0) {
      // Read as text and parsed by pgvector: the pools register no type parsers, so this works the same on PGlite.
      const stored = await tx.query<{ fact_id: string; embedding: string }>(
        `select fact_id, embedding::text as embedding from fact_embeddings where model = $1 and fact_id = any($2)`,
        [embedder.model, ids],
      );
      for (const row of stored.rows) vectors.set(row.fact_id, fromSql(row.embedding) as number[]);
    }
    const fullTextById = new Map(fullText.map((hit) => [hit.id, hit]));
    const vectorById = new Map(vector.map((hit) => [hit.id, hit]));
    const floor: RelevanceFloor = { ...relevanceFloor(embedder.model), ...options.floor };
    const readable = facts.rows.filter((row) => {
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
    const share = clampShare(options.neighbours ?? neighbourWeight);
    const lenders = scored.filter((item) => item.relevant && (fullTextById.get(item.fact.id)?.own ?? 0) > 0).map((item) => share * fullTextById.get(item.fact.id)!.own);
    for (const item of floor.neighbours ? scored : []) {
      const hit = fullTextById.get(item.fact.id);
      if (item.relevant || hit === undefined) continue;
      const borrowed = hit.value - hit.own;
      if (borrowed > 0 && lenders.some((lent) => Math.abs(lent - borrowed) <= 1e-3 * Math.max(1, lent))) item.relevant = true;
    }
    const kept = options.includeIrrelevant === true ? scored : scored.filter((item) => item.relevant);
    return diversify(kept, vectors, { limit, lambda, tokenBudget });
  });
}

/**
 * From this many facts on, a scope's count for BM25 (its N) is kept for a few
 * minutes rather than counted on each search: counting is a pass over the
 * scope, and a few facts more or less do not move the weights of a scope this
 * large. Smaller scopes are counted each time, so their scores are exact.
 */
export const keptFactCountFrom = 1000;

async function fullTextArm(tx: ScopedTransaction, text: string, candidates: number, neighbours: number, sizes: ScopeSizeCache | undefined): Promise<ArmHit[]> {
  if (anyWordQuery(text) === null) return [];
  const key = ScopeSizeCache.factsKey(tx.scope);
  const known = sizes?.get(key, keptFactCountFrom);
  // One function applies the scope rule itself, so that the GIN index can serve the match (see
  // migration 0005); it ranks by BM25 and lends a share of each strong match to its neighbours (0019);
  // it counts the scope's facts unless told how many there are, and says what it used (0024).
  const { rows } = await tx.query<{ id: string; score: number; own: number; scope_facts: string }>(
    'select id, score, own, scope_facts from roster_search_ranked($1, $2, $3, $4)',
    [text, candidates, neighbours, known ?? null],
  );
  const counted = rows[0] === undefined ? undefined : Number(rows[0].scope_facts);
  if (known === undefined && counted !== undefined && counted >= keptFactCountFrom) sizes?.set(key, counted, false);
  return rows.map((row, index) => ({ id: row.id, rank: index + 1, value: Number(row.score), own: Number(row.own) }));
}

async function vectorArm(
  tx: ScopedTransaction,
  embedder: Embedder,
  queryVector: number[],
  candidates: number,
  exactBelow: number | undefined,
  sizes: ScopeSizeCache | undefined,
): Promise<ArmHit[]> {
  const dimensions = queryVector.length;
  if (dimensions !== embedder.dimensions || dimensions === 0) {
    throw new RosterError('embedder_bad_response', `The query vector has ${dimensions} dimensions; the model ${embedder.model} stores ${embedder.dimensions}.`);
  }
  const expression = vectorExpression(dimensions);
  const limit = exactBelow ?? defaultExactBelow;
  const key = ScopeSizeCache.key(tx.scope, embedder.model);
  const tableKey = ScopeSizeCache.tableKey(embedder.model);
  let size = sizes?.get(key, limit);
  let table = sizes?.get(tableKey, 0);
  if (size === undefined || table === undefined) {
    // The scope's vectors (row-level security keeps the count to the scope), up to the limit; and
    // the planner's estimate of the whole table's rows, which any role may read in the catalog.
    const counted = await tx.query<{ count: string; table_rows: number }>(
      `select (select count(*) from (select 1 from fact_embeddings fe where fe.model = $1 and fe.searchable limit $2) s) as count,
              (select reltuples from pg_class where oid = 'fact_embeddings'::regclass) as table_rows`,
      [embedder.model, limit + 1],
    );
    size = Number(counted.rows[0]?.count ?? 0);
    table = Number(counted.rows[0]?.table_rows ?? -1);
    sizes?.set(key, size, size > limit);
    sizes?.set(tableKey, table, false);
  }
  const exact = size <= limit && !(exactBelow === undefined && prefersGraph(size, table));
  if (!exact) {
    // HNSW filters after the index scan; iterative scans keep going until the
    // scope filter has let enough rows through. Sorting is discouraged so that
    // the planner walks the graph instead of sorting the scope.
    await tx.query(
      `select set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', $1, true),
              set_config('enable_sort', 'off', true)`,
      [String(Math.min(Math.max(candidates, minimumGraphCandidates), 1000))],
    );
  }
  // A small scope is scanned exactly rather than asked of the graph: ordered by the distance plus
  // nothing, which no index offers, so the planner sorts the scope's rows (found by their own index).
  const { rows } = await tx.query<{ id: string; distance: number }>(
    `select fe.fact_id as id, ${expression} <=> $1::vector(${dimensions}) as distance
     from fact_embeddings fe
     where fe.model = $2 and fe.searchable
     order by ${exact ? `(${expression} <=> $1::vector(${dimensions})) + 0` : `${expression} <=> $1::vector(${dimensions})`}
     limit $3`,
    [toSql(queryVector), embedder.model, exact ? candidates : Math.max(candidates, minimumGraphCandidates)],
  );
  if (!exact) await tx.query(`select set_config('enable_sort', 'on', true)`);
  // relaxed_order may return neighbours slightly out of order.
  const sorted = rows.map((row) => ({ id: row.id, distance: Number(row.distance) })).sort((a, b) => a.distance - b.distance);
  return sorted.map((row, index) => ({ id: row.id, rank: index + 1, value: row.distance, own: 0 }));
}

function clampShare(value: number): number {
  return Number.isFinite(value) ? Math.min(Math.max(value, 0), 1) : neighbourWeight;
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(Math.max(Math.trunc(value), min), max);
}
