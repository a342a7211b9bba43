/**
 * Retrieval latency and recall on synthetic facts, at 1k, 10k and 100k facts.
 *
 * At each size: 10 agents with one person each share the facts evenly, so the
 * measured scope (one agent, one person) holds a tenth of them. 100 queries,
 * 80 paraphrased from facts of that scope and 20 from facts of other scopes.
 * Compared: `memory.search` (hybrid) through HNSW and through an exact scan,
 * the vector arm alone, pgvector's default settings run by hand, and the
 * baseline of the systems memory replaces: load every vector of the scope and
 * compute cosines in JavaScript.
 *
 * To tell the graph from the filter, recall is also measured without any
 * scope filter, and once more on an index rebuilt by hand with other build
 * parameters (bench only: the product's index is ensureEmbeddingModel's).
 *
 * On the embedded database always; when TEST_DATABASE_URL names a server
 * Postgres with pgvector, every size is measured there too, in a database of
 * its own created and dropped by the run, and its rows are marked `(server)`.
 *
 * Options: `--sizes=1000,10000,100000`, `--queries=100`, `--rebuild=16:64`
 * (m:ef_construction of the second index; `--rebuild=off` to skip it).
 *
 * `--statistics` runs only a comparison instead (at 1k and 10k facts unless
 * `--sizes` says otherwise, `--rounds=4`): the same searches with the word
 * columns' planner statistics off, as migration 0025 leaves them, and on, as
 * before it, in the same database, the two alternated round by round. It
 * writes its own section of docs/benchmarks.md (`retrieval-statistics`).
 */
import { createMemory, type SearchOptions } from '@roster/memory';
import { testInstallationKey } from '@roster/config/testing';
import { formatMs, formatRatio, mean, progress, type BenchmarkReport } from './report.js';
import { createRandom } from './synthetic.js';
import { agents, alwaysExact, type ArmSettings, armSettings, candidateKnobs, exactNeighbours, fullScanSearch, graphSearch, limit, loadSize, loadVectors, makeQueries, rebuildIndex, recallAt, seed, timeEach, vectorArmByHand, vectorPlan, warmUp } from './retrieval-fixture.js';
import { buildReport, type IndexResult, type KnobResult, type RowsReturned, type SizeResult } from './retrieval-report.js';
import { runStatistics } from './retrieval-statistics.js';

export const title = 'Retrieval: latency and recall on synthetic facts';


export interface Options {
  sizes: number[];
  queries: number;
  /** Build parameters of the index rebuilt by hand, or null to skip it. */
  rebuild: { m: number; efConstruction: number } | null;
  /** Only the comparison of the word columns without and with planner statistics. */
  statistics: boolean;
  /** Rounds of that comparison, each measuring both configurations. */
  rounds: number;
}

function parseOptions(args: readonly string[]): Options {
  const options: Options = { sizes: [1_000, 10_000, 100_000], queries: 100, rebuild: { m: 16, efConstruction: 64 }, statistics: false, rounds: 4 };
  let sizesGiven = false;
  for (const arg of args) {
    const [key, value = ''] = arg.replace(/^--/, '').split('=');
    if (key === 'sizes') {
      options.sizes = value.split(',').map((size) => Number.parseInt(size.replace(/k$/i, '000'), 10));
      sizesGiven = true;
    } else if (key === 'queries') options.queries = Number.parseInt(value, 10);
    else if (key === 'statistics' && value === '') options.statistics = true;
    else if (key === 'rounds') options.rounds = Number.parseInt(value, 10);
    else if (key === 'rebuild') {
      const [m, efConstruction] = value.split(':').map(Number);
      options.rebuild = value === 'off' ? null : { m: m ?? Number.NaN, efConstruction: efConstruction ?? Number.NaN };
    } else throw new Error(`Unknown option ${arg}: retrieval takes --sizes=1000,10000,100000, --queries=100, --rebuild=32:128|off, --statistics and --rounds=4.`);
  }
  if (options.statistics && !sizesGiven) options.sizes = [1_000, 10_000];
  if (options.sizes.some((size) => !Number.isInteger(size) || size < agents * limit) || !(options.queries > 0) || !(options.rounds > 0)) {
    throw new Error(`--sizes must be integers of at least ${agents * limit}, --queries and --rounds positive integers.`);
  }
  if (options.rebuild !== null && !(options.rebuild.m >= 2 && options.rebuild.efConstruction >= 2 * options.rebuild.m)) {
    throw new Error('--rebuild takes m:ef_construction with m ≥ 2 and ef_construction ≥ 2m, e.g. 32:128, or off.');
  }
  return options;
}


export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  const options = parseOptions(args);
  if (options.statistics) return runStatistics(options);
  const results: SizeResult[] = [];
  for (const size of options.sizes) results.push(await measureSize(size, options, 'embedded'));
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (serverUrl !== undefined && serverUrl !== '') {
    for (const size of options.sizes) results.push(await measureSize(size, options, 'server'));
  } else {
    progress('retrieval: TEST_DATABASE_URL is not set; the server Postgres runs are skipped');
  }
  return buildReport(results, options);
}


async function measureSize(size: number, options: Options, kind: 'embedded' | 'server'): Promise<SizeResult> {
  const { database, close, embedder, target, facts, loadSeconds, indexSeconds, analyzeSeconds } = await loadSize(size, kind);
  try {
    const queries = makeQueries(facts, target, options.queries, createRandom(seed * 7 + size));
    const queryVectors = await embedder.embed(queries);
    const scopeVectors = await loadVectors(database, embedder.model, target);
    const truth = queryVectors.map((vector) => exactNeighbours(scopeVectors, vector, limit));
    const allVectors = await loadVectors(database, embedder.model, null);
    const truthOfAll = queryVectors.map((vector) => exactNeighbours(allVectors, vector, limit));

    const memory = createMemory({ database, embedder , key: testInstallationKey });
    await memory.prepare();
    const hybridHnswOptions: SearchOptions = { limit, exactBelow: 0, includeIrrelevant: true };
    const hybridExactOptions: SearchOptions = { limit, exactBelow: alwaysExact, includeIrrelevant: true };
    const fullTextOptions: SearchOptions = { limit, mode: 'full-text', includeIrrelevant: true };
    // diversity 1: no MMR, so the results are the arm's own top 10.
    const vectorOptions = (candidates: number, exactBelow: number): SearchOptions => ({ limit, mode: 'vector', diversity: 1, candidates, exactBelow, includeIrrelevant: true });

    progress(`retrieval ${size}: warming up`);
    for (const query of queries.slice(0, warmUp)) {
      await memory.search(target, query, hybridHnswOptions);
      await memory.search(target, query, hybridExactOptions);
      await memory.search(target, query, fullTextOptions);
      await memory.search(target, query, vectorOptions(40, 0));
      await memory.search(target, query, vectorOptions(40, alwaysExact));
      await fullScanSearch(database, embedder, target, query);
    }

    progress(`retrieval ${size}: timing hybrid search through HNSW`);
    const hybridHnsw = await timeEach(queries, (query) => memory.search(target, query, hybridHnswOptions));
    progress(`retrieval ${size}: timing hybrid search with an exact scan`);
    const hybridExact = await timeEach(queries, (query) => memory.search(target, query, hybridExactOptions));
    progress(`retrieval ${size}: timing the full scan in JavaScript`);
    const fullScan = await timeEach(queries, (query) => fullScanSearch(database, embedder, target, query));
    progress(`retrieval ${size}: timing the full-text arm alone`);
    const fullTextArm = await timeEach(queries, (query) => memory.search(target, query, fullTextOptions));

    const recallOf = (results: Array<Array<{ fact: { id: string } }>>) =>
      mean(results.map((found, index) => recallAt(found.map((result) => result.fact.id), scopeVectors, queryVectors[index]!, truth[index]!)));
    progress(`retrieval ${size}: the vector arm's exact path`);
    const vectorExact = await timeEach(queries, (query) => memory.search(target, query, vectorOptions(40, alwaysExact)));

    const measureIndex = async (label: string, buildSeconds: number): Promise<IndexResult> => {
      const graphAlone: IndexResult['graphAlone'] = [];
      for (const efSearch of [40, 400]) {
        const found: string[][] = [];
        for (const vector of queryVectors) found.push(await graphSearch(database, embedder, vector, efSearch));
        graphAlone.push({ efSearch, recall: mean(found.map((ids, index) => recallAt(ids, allVectors, queryVectors[index]!, truthOfAll[index]!))) });
      }
      const knobs: KnobResult[] = [];
      for (const candidates of candidateKnobs) {
        progress(`retrieval ${size}: vector arm through HNSW (${label}), ${candidates} candidates`);
        const timed = await timeEach(queries, (query) => memory.search(target, query, vectorOptions(candidates, 0)));
        knobs.push({ candidates, recall: recallOf(timed.values), latency: timed });
      }
      return { label, buildSeconds, graphAlone, knobs };
    };
    const indexes = [await measureIndex('m 32, ef_construction 128: ensureEmbeddingModel', indexSeconds)];

    progress(`retrieval ${size}: the vector arm's statement by hand with pgvector's defaults`);
    const rowsReturned = async (settings: ArmSettings): Promise<RowsReturned> => {
      const found: string[][] = [];
      for (const vector of queryVectors) found.push(await vectorArmByHand(database, embedder, target, vector, settings));
      return {
        meanRows: mean(found.map((rows) => rows.length)),
        minRows: Math.min(...found.map((rows) => rows.length)),
        zeroRows: found.filter((rows) => rows.length === 0).length,
        recall: mean(found.map((rows, index) => recallAt(rows, scopeVectors, queryVectors[index]!, truth[index]!))),
      };
    };
    const defaults = { defaults: await rowsReturned('defaults'), 'defaults-graph': await rowsReturned('defaults-graph') };
    const plans = {} as Record<ArmSettings, string>;
    for (const settings of armSettings) plans[settings] = await vectorPlan(database, embedder, target, queryVectors[0]!, settings);

    if (options.rebuild !== null) {
      const { m, efConstruction } = options.rebuild;
      progress(`retrieval ${size}: rebuilding the HNSW index by hand with m = ${m}, ef_construction = ${efConstruction}`);
      const rebuildSeconds = await rebuildIndex(database, embedder, m, efConstruction);
      progress(`retrieval ${size}: rebuilt in ${rebuildSeconds.toFixed(1)} s`);
      indexes.push(await measureIndex(`m ${m}, ef_construction ${efConstruction}: rebuilt by hand`, rebuildSeconds));
    }

    const result: SizeResult = {
      database: kind,
      size,
      scopeSize: scopeVectors.size,
      loadSeconds,
      analyzeSeconds,
      hybridHnsw,
      hybridExact,
      fullScan,
      fullTextArm,
      vectorHnsw: indexes[0]!.knobs[0]!.latency,
      vectorExact,
      recallHnsw: indexes[0]!.knobs[0]!.recall,
      recallExact: recallOf(vectorExact.values),
      distances: { tenth: mean(truth.map((neighbours) => neighbours.kthDistance)), median: mean(truth.map((neighbours) => neighbours.medianDistance)) },
      indexes,
      defaults,
      plans,
    };
    progress(
      `retrieval ${size}: hybrid p50 ${formatMs(hybridHnsw.p50)} ms (HNSW) / ${formatMs(hybridExact.p50)} ms (exact), ` +
        `full scan p50 ${formatMs(fullScan.p50)} ms, recall@10 ${formatRatio(result.recallHnsw)}`,
    );
    return result;
  } finally {
    await close();
  }
}
