// The retrieval benchmark's knobs, its loaded databases, and the searches it times beside the product's own.
import { migrate, openEmbeddedDatabase, type Database, type Scope, type Transaction } from '@roster/db';
import { openTestDatabase } from '@roster/db/testing';
import type { Embedder } from '@roster/contracts';
import { createHashingEmbedder, ensureEmbeddingModel } from '@roster/memory';
import { fromSql, toSql } from 'pgvector';
import { bulkLoadFacts, createScopes, type FactToLoad } from './bulk-load.js';
import { percentile, progress } from './report.js';
import { createFact, createRandom, createVocabulary, paraphrase } from './synthetic.js';
import type { Timed } from './retrieval-report.js';

export const agents = 10;
export const limit = 10;
export const seed = 20_240_611;
export const warmUp = 10;
/** The issue's targets at 100k facts. */
export const targetSpeedUp = 20;
export const targetRecall = 0.95;
/** `exactBelow` large enough that every scope here is scanned exactly. */
export const alwaysExact = 1_000_000_000;
/** Candidate counts tried for the vector arm (search derives ef_search from it; 40 is its default for limit 10). */
export const candidateKnobs = [40, 100, 200, 400];
/**
 * Enough memory for the HNSW graph of 100k 256-dimension vectors to be built
 * in memory. With Postgres' 64 MB default the build spills and takes several
 * times longer; a server would be configured the same way before a bulk load.
 */
export const indexBuildMemory = '512MB';


/** A migrated database of the kind asked for, and how to let it go. */
async function openMeasured(kind: 'embedded' | 'server'): Promise<{ database: Database; close: () => Promise<void> }> {
  if (kind === 'server') {
    const test = await openTestDatabase({ serverUrl: process.env.TEST_DATABASE_URL });
    return { database: test.database, close: () => test.cleanup() };
  }
  const database = await openEmbeddedDatabase('memory://');
  await migrate(database);
  return { database, close: () => database.close() };
}

/** A database of one size, loaded, indexed and analysed: what every measurement starts from. */
interface LoadedSize {
  database: Database;
  close: () => Promise<void>;
  embedder: Embedder;
  target: Scope;
  facts: FactToLoad[];
  loadSeconds: number;
  indexSeconds: number;
  analyzeSeconds: number;
}

export async function loadSize(size: number, kind: 'embedded' | 'server'): Promise<LoadedSize> {
  const embedder = createHashingEmbedder();
  const opened = await openMeasured(kind);
  const { database } = opened;
  try {
    const scopes = await createScopes(database, agents);
    const target = scopes[0]!;
    const vocabulary = createVocabulary(seed);
    const random = createRandom(seed + size);
    const facts = Array.from({ length: size }, (_, index) => ({ scope: scopes[index % agents]!, content: createFact(random, vocabulary) }));

    progress(`retrieval ${size}: loading ${size} facts and vectors (${embedder.model}) into 10 scopes`);
    let started = performance.now();
    let reported = 0;
    await bulkLoadFacts(database, embedder, facts, {
      onProgress: (loaded) => {
        if (loaded - reported >= 20_000) {
          reported = loaded;
          progress(`retrieval ${size}: ${loaded} rows loaded, ${((performance.now() - started) / 1000).toFixed(0)} s`);
        }
      },
    });
    const loadSeconds = (performance.now() - started) / 1000;

    // Session-wide (PGlite is one session), so the index build inside ensureEmbeddingModel sees it.
    await database.adminScope('bench: memory for the index build', (tx) => tx.query(`set maintenance_work_mem = '${indexBuildMemory}'`));
    progress(`retrieval ${size}: loaded in ${loadSeconds.toFixed(1)} s; building the HNSW index (ensureEmbeddingModel)`);
    started = performance.now();
    await ensureEmbeddingModel(database, embedder.model, embedder.dimensions);
    const indexSeconds = (performance.now() - started) / 1000;
    started = performance.now();
    // What autovacuum would do after a bulk load; PGlite runs no autovacuum. As the owner, as turns.ts does:
    // roster_ops may read the tables but not analyze them (Postgres skips them with a warning).
    await database.ownerSession('bench: analyze after bulk load', async (session) => {
      await session.query('analyze facts');
      await session.query('analyze fact_embeddings');
    });
    const analyzeSeconds = (performance.now() - started) / 1000;
    progress(`retrieval ${size}: index built in ${indexSeconds.toFixed(1)} s, analyzed in ${analyzeSeconds.toFixed(1)} s`);
    return { database, close: opened.close, embedder, target, facts, loadSeconds, indexSeconds, analyzeSeconds };
  } catch (error) {
    await opened.close();
    throw error;
  }
}


/** Mostly paraphrases of the scope's own facts; a fifth from other scopes' facts. */
export function makeQueries(facts: ReadonlyArray<{ scope: Scope; content: string }>, target: Scope, count: number, random: () => number): string[] {
  const own = facts.filter((fact) => fact.scope === target);
  const others = facts.filter((fact) => fact.scope !== target);
  return Array.from({ length: count }, (_, index) => {
    const source = index % 5 === 4 ? others : own;
    return paraphrase(random, source[Math.floor(random() * source.length)]!.content);
  });
}

export async function timeEach<T>(queries: readonly string[], fn: (query: string) => Promise<T>): Promise<Timed & { values: T[]; durations: number[] }> {
  const durations: number[] = [];
  const values: T[] = [];
  for (const query of queries) {
    const started = performance.now();
    values.push(await fn(query));
    durations.push(performance.now() - started);
  }
  return { p50: percentile(durations, 50), p95: percentile(durations, 95), values, durations };
}

function dot(left: ArrayLike<number>, right: ArrayLike<number>): number {
  let sum = 0;
  for (let index = 0; index < left.length; index += 1) sum += left[index]! * right[index]!;
  return sum;
}

/**
 * The baseline: every vector of the scope loaded and compared in JavaScript,
 * then the winners' facts read, as the systems memory replaces did it.
 */
export async function fullScanSearch(database: Database, embedder: Embedder, scope: Scope, query: string): Promise<string[]> {
  const [vector] = (await embedder.embed([query])) as [number[]];
  return database.withScope(scope, async (tx) => {
    const { rows } = await tx.query<{ fact_id: string; embedding: string }>(
      'select fact_id, embedding::text as embedding from fact_embeddings where model = $1',
      [embedder.model],
    );
    const scored = rows.map((row) => ({ id: row.fact_id, similarity: dot(vector, fromSql(row.embedding) as number[]) }));
    scored.sort((a, b) => b.similarity - a.similarity);
    const ids = scored.slice(0, limit).map((row) => row.id);
    await tx.query('select id, content from facts where id = any($1)', [ids]);
    return ids;
  });
}

/** Every vector of the scope (or of all scopes, as owner), as stored (float4), for the exact answers. */
export async function loadVectors(database: Database, model: string, scope: Scope | null): Promise<Map<string, Float64Array>> {
  const read = async (tx: Transaction) => {
    const { rows } = await tx.query<{ fact_id: string; embedding: string }>(
      'select fact_id, embedding::text as embedding from fact_embeddings where model = $1',
      [model],
    );
    return new Map(rows.map((row) => [row.fact_id, Float64Array.from(fromSql(row.embedding) as number[])]));
  };
  return scope === null ? database.adminScope('bench: read every vector for exact answers', read) : database.withScope(scope, read);
}

interface Neighbours {
  /** Cosine distance of the k-th nearest vector: anything at most this far is a correct answer (ties count). */
  kthDistance: number;
  /** Cosine distance of the median vector: how far the crowd is, next to the k-th. */
  medianDistance: number;
  k: number;
}

export function exactNeighbours(vectors: Map<string, Float64Array>, query: readonly number[], k: number): Neighbours {
  const distances = Float64Array.from(vectors.values(), (vector) => 1 - dot(query, vector)).sort();
  const count = Math.min(k, distances.length);
  return {
    kthDistance: distances[count - 1] ?? Number.POSITIVE_INFINITY,
    medianDistance: distances[Math.floor(distances.length / 2)] ?? Number.NaN,
    k: count,
  };
}

/** recall@k against the exact answer; a result tied with the k-th nearest counts as found. */
export function recallAt(ids: readonly string[], vectors: Map<string, Float64Array>, query: readonly number[], truth: Neighbours): number {
  let found = 0;
  for (const id of ids.slice(0, truth.k)) {
    const vector = vectors.get(id);
    if (vector !== undefined && 1 - dot(query, vector) <= truth.kthDistance + 1e-9) found += 1;
  }
  return found / truth.k;
}

/**
 * The vector arm's statement as packages/memory/src/search.ts runs it (one
 * table, the `searchable` flag, the model's partial HNSW index). Keep in step.
 */
function vectorArmSql(dimensions: number): string {
  const expression = `(fe.embedding::vector(${dimensions}))`;
  return `select fe.fact_id as id, ${expression} <=> $1::vector(${dimensions}) as distance
     from fact_embeddings fe
     where fe.model = $2 and fe.searchable
     order by ${expression} <=> $1::vector(${dimensions})
     limit $3`;
}

/**
 * Settings of the vector arm's transaction:
 * - `hnsw`: what search.ts sets for a large scope (iterative scan, ef_search 100, sorting discouraged);
 * - `exact`: what it sets for a small scope (no index scan);
 * - `defaults`: nothing at all, the planner's free choice with pgvector's defaults;
 * - `defaults-graph`: pgvector's defaults (no iterative scan, ef_search 40) with the graph walked,
 *   as search.ts makes the planner do: the failure the issue quotes.
 */
export const armSettings = ['hnsw', 'exact', 'defaults', 'defaults-graph'] as const;
export type ArmSettings = (typeof armSettings)[number];

async function applySettings(tx: { query(text: string): Promise<unknown> }, settings: ArmSettings): Promise<void> {
  if (settings === 'exact') await tx.query(`select set_config('enable_indexscan', 'off', true)`);
  else if (settings === 'hnsw') {
    await tx.query(`select set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', '100', true), set_config('enable_sort', 'off', true)`);
  } else if (settings === 'defaults-graph') {
    await tx.query(`select set_config('hnsw.iterative_scan', 'off', true), set_config('hnsw.ef_search', '40', true), set_config('enable_sort', 'off', true)`);
  }
}

/** The vector arm's statement run by hand under the scope's row-level security, for `limit` rows. */
export async function vectorArmByHand(database: Database, embedder: Embedder, scope: Scope, vector: readonly number[], settings: ArmSettings): Promise<string[]> {
  return database.withScope(scope, async (tx) => {
    await applySettings(tx, settings);
    const { rows } = await tx.query<{ id: string }>(vectorArmSql(embedder.dimensions), [toSql(vector), embedder.model, limit]);
    return rows.map((row) => row.id);
  });
}

/** The plan nodes of the vector arm's statement under the given settings. */
export async function vectorPlan(database: Database, embedder: Embedder, scope: Scope, vector: readonly number[], settings: ArmSettings): Promise<string> {
  return database.withScope(scope, async (tx) => {
    await applySettings(tx, settings);
    const { rows } = await tx.query<{ 'QUERY PLAN': unknown }>(`explain (format json) ${vectorArmSql(embedder.dimensions)}`, [
      toSql(vector),
      embedder.model,
      limit,
    ]);
    const plan = rows[0]?.['QUERY PLAN'];
    const root = (Array.isArray(plan) ? plan[0] : JSON.parse(String(plan))[0]) as { Plan: PlanNode };
    return describePlan(root.Plan);
  });
}

/** The graph alone: the nearest `limit` of all scopes' vectors through HNSW, as owner, no filter at all. */
export async function graphSearch(database: Database, embedder: Embedder, vector: readonly number[], efSearch: number): Promise<string[]> {
  return database.adminScope('bench: HNSW without a scope filter', async (tx) => {
    await tx.query(`select set_config('hnsw.ef_search', $1, true), set_config('enable_sort', 'off', true)`, [String(efSearch)]);
    const { rows } = await tx.query<{ id: string }>(vectorArmSql(embedder.dimensions), [toSql(vector), embedder.model, limit]);
    return rows.map((row) => row.id);
  });
}

/**
 * Replace the model's index with one of other build parameters, same name,
 * column and predicate. Bench only: it shows what changing
 * ensureEmbeddingModel's `create index` would buy.
 */
export async function rebuildIndex(database: Database, embedder: Embedder, m: number, efConstruction: number): Promise<number> {
  const started = performance.now();
  // As the owner: an index is the owner's to drop and make (roster_ops may not).
  await database.ownerScope('bench: rebuild the HNSW index with other parameters', async (tx) => {
    const { rows } = await tx.query<{ index_name: string }>('select index_name from embedding_models where model = $1', [embedder.model]);
    const indexName = rows[0]!.index_name;
    const { rows: definitions } = await tx.query<{ indexdef: string }>('select indexdef from pg_indexes where indexname = $1', [indexName]);
    const definition = definitions[0]!.indexdef;
    await tx.query(`set local maintenance_work_mem = '${indexBuildMemory}'`);
    await tx.query(`drop index ${indexName}`);
    await tx.query(definition.replace(/ WITH \([^)]*\)/, '').replace(/ WHERE /, ` WITH (m = ${m}, ef_construction = ${efConstruction}) WHERE `));
  });
  return (performance.now() - started) / 1000;
}

export interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

export function describePlan(node: PlanNode): string {
  const target = node['Index Name'] !== undefined ? ` ${node['Index Name'].replace(/^(fact_embeddings_hnsw)_\w+$/, '$1_…')}` : node['Relation Name'] !== undefined ? ` ${node['Relation Name']}` : '';
  const children = (node.Plans ?? []).map(describePlan);
  return `${node['Node Type']}${target}${children.length > 0 ? ` (${children.join(', ')})` : ''}`;
}
