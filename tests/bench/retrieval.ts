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
import { migrate, openEmbeddedDatabase, type Database, type Scope, type Transaction } from '@roster/db';
import { openTestDatabase } from '@roster/db/testing';
import { createHashingEmbedder, createMemory, ensureEmbeddingModel, type Embedder, type SearchOptions } from '@roster/memory';
import { testInstallationKey } from '@roster/config/testing';
import { fromSql, toSql } from 'pgvector';
import { bulkLoadFacts, createScopes, type FactToLoad } from './bulk-load.js';
import { formatMs, formatRatio, mean, percentile, progress, type BenchmarkReport, type ResultTable } from './report.js';
import { applyStatistics, roundOrder, statisticsConfigurations, statisticsLabels, wordColumns, type StatisticsConfiguration } from './statistics.js';
import { createFact, createRandom, createVocabulary, paraphrase } from './synthetic.js';

export const title = 'Retrieval: latency and recall on synthetic facts';

const agents = 10;
const limit = 10;
const seed = 20_240_611;
const warmUp = 10;
/** The issue's targets at 100k facts. */
const targetSpeedUp = 20;
const targetRecall = 0.95;
/** `exactBelow` large enough that every scope here is scanned exactly. */
const alwaysExact = 1_000_000_000;
/** Candidate counts tried for the vector arm (search derives ef_search from it; 40 is its default for limit 10). */
const candidateKnobs = [40, 100, 200, 400];
/**
 * Enough memory for the HNSW graph of 100k 256-dimension vectors to be built
 * in memory. With Postgres' 64 MB default the build spills and takes several
 * times longer; a server would be configured the same way before a bulk load.
 */
const indexBuildMemory = '512MB';

interface Options {
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

interface Timed {
  p50: number;
  p95: number;
}

interface KnobResult {
  candidates: number;
  recall: number;
  latency: Timed;
}

/** How one HNSW index does: the graph alone, and the vector arm under the scope filter. */
interface IndexResult {
  label: string;
  buildSeconds: number;
  /** recall@10 over all N vectors, no scope filter, by ef_search. */
  graphAlone: Array<{ efSearch: number; recall: number }>;
  /** The vector arm through memory.search, by candidates. */
  knobs: KnobResult[];
}

interface SizeResult {
  /** Where it ran: the embedded database, or the server Postgres of TEST_DATABASE_URL. */
  database: 'embedded' | 'server';
  size: number;
  scopeSize: number;
  loadSeconds: number;
  analyzeSeconds: number;
  hybridHnsw: Timed;
  hybridExact: Timed;
  fullScan: Timed;
  fullTextArm: Timed;
  vectorHnsw: Timed;
  vectorExact: Timed;
  recallHnsw: number;
  recallExact: number;
  /** Mean cosine distance of the 10th nearest vector of the scope, and of its median vector. */
  distances: { tenth: number; median: number };
  indexes: IndexResult[];
  /** The vector arm's statement by hand with pgvector's defaults: the planner's choice, and the graph walked. */
  defaults: Record<'defaults' | 'defaults-graph', RowsReturned>;
  plans: Record<ArmSettings, string>;
}

interface RowsReturned {
  meanRows: number;
  minRows: number;
  zeroRows: number;
  recall: number;
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

async function loadSize(size: number, kind: 'embedded' | 'server'): Promise<LoadedSize> {
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
    const hybridHnswOptions: SearchOptions = { limit, exactBelow: 0 };
    const hybridExactOptions: SearchOptions = { limit, exactBelow: alwaysExact };
    const fullTextOptions: SearchOptions = { limit, mode: 'full-text' };
    // diversity 1: no MMR, so the results are the arm's own top 10.
    const vectorOptions = (candidates: number, exactBelow: number): SearchOptions => ({ limit, mode: 'vector', diversity: 1, candidates, exactBelow });

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

/** The searches the statistics comparison times: those of the latency tables above. */
const comparedSearches = ['hybrid HNSW', 'hybrid exact', 'full-text arm', 'vector arm HNSW', 'vector arm exact', 'full scan (JS)'] as const;
type ComparedSearch = (typeof comparedSearches)[number];

/** What the planner made of the full-text arm's match in one configuration. */
interface MatchEstimate {
  /** Plan nodes of the first query's match. */
  plan: string;
  /** Mean over the queries of the rows the planner expected, and of the rows found. */
  estimatedRows: number;
  actualRows: number;
}

interface ConfigurationResult {
  /** Every query's time of every round, per search. */
  durations: Record<ComparedSearch, number[]>;
  recallHnsw: number;
  /** Word columns holding statistics after the configuration was applied, of wordColumns.length. */
  sampled: number;
  estimate: MatchEstimate;
}

interface StatisticsResult {
  database: 'embedded' | 'server';
  size: number;
  scopeSize: number;
  configurations: Record<StatisticsConfiguration, ConfigurationResult>;
}

async function runStatistics(options: Options): Promise<BenchmarkReport> {
  const kinds: Array<'embedded' | 'server'> = ['embedded'];
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (serverUrl !== undefined && serverUrl !== '') kinds.push('server');
  else progress('retrieval: TEST_DATABASE_URL is not set; the server Postgres runs are skipped');
  const results: StatisticsResult[] = [];
  for (const kind of kinds) for (const size of options.sizes) results.push(await compareStatistics(size, options, kind));
  return buildStatisticsReport(results, options, kinds.includes('server'));
}

/**
 * One database of `size` facts, measured in both configurations of the word
 * columns' statistics, round after round, in alternating order; each
 * configuration is applied (and the database analysed as its owner) and
 * warmed up before it is timed.
 */
async function compareStatistics(size: number, options: Options, kind: 'embedded' | 'server'): Promise<StatisticsResult> {
  const { database, close, embedder, target, facts } = await loadSize(size, kind);
  try {
    const queries = makeQueries(facts, target, options.queries, createRandom(seed * 7 + size));
    const queryVectors = await embedder.embed(queries);
    const scopeVectors = await loadVectors(database, embedder.model, target);
    const truth = queryVectors.map((vector) => exactNeighbours(scopeVectors, vector, limit));
    const memory = createMemory({ database, embedder, key: testInstallationKey });
    await memory.prepare();
    const searches: Record<ComparedSearch, (query: string) => Promise<unknown>> = {
      'hybrid HNSW': (query) => memory.search(target, query, { limit, exactBelow: 0 }),
      'hybrid exact': (query) => memory.search(target, query, { limit, exactBelow: alwaysExact }),
      'full-text arm': (query) => memory.search(target, query, { limit, mode: 'full-text' }),
      'vector arm HNSW': (query) => memory.search(target, query, { limit, mode: 'vector', diversity: 1, candidates: 40, exactBelow: 0 }),
      'vector arm exact': (query) => memory.search(target, query, { limit, mode: 'vector', diversity: 1, candidates: 40, exactBelow: alwaysExact }),
      'full scan (JS)': (query) => fullScanSearch(database, embedder, target, query),
    };
    const empty = (): ConfigurationResult => ({
      durations: Object.fromEntries(comparedSearches.map((search) => [search, []])) as unknown as Record<ComparedSearch, number[]>,
      recallHnsw: Number.NaN,
      sampled: 0,
      estimate: { plan: '', estimatedRows: Number.NaN, actualRows: Number.NaN },
    });
    const configurations: Record<StatisticsConfiguration, ConfigurationResult> = { without: empty(), with: empty() };
    for (let round = 0; round < options.rounds; round += 1) {
      for (const configuration of roundOrder(round)) {
        const result = configurations[configuration];
        progress(`retrieval ${kind} ${size}: round ${round + 1} of ${options.rounds}, ${statisticsLabels[configuration]}`);
        result.sampled = await applyStatistics(database, configuration);
        for (const query of queries.slice(0, warmUp)) for (const search of comparedSearches) await searches[search](query);
        for (const search of comparedSearches) {
          const timed = await timeEach(queries, searches[search]);
          result.durations[search].push(...timed.durations);
          if (search === 'vector arm HNSW') {
            const found = timed.values as Array<Array<{ fact: { id: string } }>>;
            result.recallHnsw = mean(found.map((hits, index) => recallAt(hits.map((hit) => hit.fact.id), scopeVectors, queryVectors[index]!, truth[index]!)));
          }
        }
        result.estimate = await matchEstimate(database, target, queries);
      }
    }
    const p50 = (configuration: StatisticsConfiguration) => formatMs(percentile(configurations[configuration].durations['hybrid HNSW'], 50));
    progress(`retrieval ${kind} ${size}: hybrid HNSW p50 ${p50('without')} ms without the word columns' statistics, ${p50('with')} ms with them`);
    return { database: kind, size, scopeSize: scopeVectors.size, configurations };
  } finally {
    await close();
  }
}

function sqlLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/**
 * The planner's estimate of the full-text arm's match against what it found:
 * the `hits` statement of roster_search_ranked (migration 0024) run by hand as
 * the owner with EXPLAIN ANALYZE, the scope and the query's tsquery written
 * in as constants, as the function's first (custom) plans see them.
 */
async function matchEstimate(database: Database, scope: Scope, queries: readonly string[]): Promise<MatchEstimate> {
  return database.ownerScope('bench: the planner’s estimate of the full-text match', async (tx) => {
    const estimated: number[] = [];
    const actual: number[] = [];
    let plan = '';
    for (const query of queries) {
      const { rows } = await tx.query<{ tsquery: string }>(
        `select array_to_string(array(select roster_quote_lexeme(l) from unnest(tsvector_to_array(to_tsvector('english', $1))) l limit 64), ' | ') as tsquery`,
        [query],
      );
      const tsquery = rows[0]?.tsquery ?? '';
      if (tsquery === '') continue;
      const explained = await tx.query<{ 'QUERY PLAN': unknown }>(
        `explain (analyze, format json)
         select f.id from facts f
         where f.search_vector @@ ${sqlLiteral(tsquery)}::tsquery
           and f.agent_id = ${sqlLiteral(scope.agentId)}::uuid
           and (f.audience = 'agent' or f.person_id = ${sqlLiteral(scope.personId ?? '')}::uuid)
           and f.trust in ('candidate', 'active', 'verified')
           and f.superseded_at is null
           and (f.valid_to is null or f.valid_to > now())`,
      );
      const output = explained.rows[0]?.['QUERY PLAN'];
      const root = (Array.isArray(output) ? output[0] : JSON.parse(String(output))[0]) as { Plan: PlanNode & { 'Plan Rows': number; 'Actual Rows': number } };
      if (plan === '') plan = describePlan(root.Plan);
      estimated.push(Number(root.Plan['Plan Rows']));
      actual.push(Number(root.Plan['Actual Rows']));
    }
    return { plan, estimatedRows: mean(estimated), actualRows: mean(actual) };
  });
}

function buildStatisticsReport(results: StatisticsResult[], options: Options, server: boolean): BenchmarkReport {
  const samples = options.rounds * options.queries;
  const timings = (result: StatisticsResult, configuration: StatisticsConfiguration, search: ComparedSearch) =>
    result.configurations[configuration].durations[search];
  const latency: ResultTable = {
    title:
      `Latency of one search, ms, word columns without statistics (this version) and with them (as before migration 0025): ` +
      `p50 and p95 of ${samples} searches each (${options.rounds} rounds × ${options.queries} queries)`,
    columns: ['facts', 'search', 'without: p50', 'p95', 'with: p50', 'p95', 'p50 with ÷ without'],
    rows: results.flatMap((result) =>
      comparedSearches.map((search) => {
        const without = timings(result, 'without', search);
        const withStatistics = timings(result, 'with', search);
        return [
          formatRow(result),
          search,
          formatMs(percentile(without, 50)),
          formatMs(percentile(without, 95)),
          formatMs(percentile(withStatistics, 50)),
          formatMs(percentile(withStatistics, 95)),
          `${(percentile(withStatistics, 50) / percentile(without, 50)).toFixed(2)}×`,
        ];
      }),
    ),
  };
  const planner: ResultTable = {
    title:
      'What the planner had: word columns holding statistics after the ANALYZE, and its estimate of the full-text match ' +
      '(`search_vector @@ query` in the scope, EXPLAIN ANALYZE by hand, mean over the queries); recall@10 of the vector arm through HNSW',
    columns: ['facts', 'configuration', 'word columns with statistics', 'match: estimated rows', 'rows found', 'plan of the match (first query)', 'recall@10 HNSW'],
    rows: results.flatMap((result) =>
      statisticsConfigurations.map((configuration) => {
        const measured = result.configurations[configuration];
        return [
          formatRow(result),
          statisticsLabels[configuration],
          `${measured.sampled} of ${wordColumns.length}`,
          measured.estimate.estimatedRows.toFixed(1),
          measured.estimate.actualRows.toFixed(1),
          measured.estimate.plan,
          formatRatio(measured.recallHnsw),
        ];
      }),
    ),
  };
  const findings = results.map((result) => {
    const ratios = comparedSearches.map((search) => percentile(timings(result, 'with', search), 50) / percentile(timings(result, 'without', search), 50));
    const without = result.configurations.without.estimate;
    const withStatistics = result.configurations.with.estimate;
    return (
      `**${formatRow(result)} facts:** p50 with the word columns' statistics ÷ without them ranges from ${Math.min(...ratios).toFixed(2)}× ` +
      `to ${Math.max(...ratios).toFixed(2)}× over the ${comparedSearches.length} searches (hybrid HNSW ${formatMs(percentile(timings(result, 'without', 'hybrid HNSW'), 50))} ms ` +
      `without, ${formatMs(percentile(timings(result, 'with', 'hybrid HNSW'), 50))} ms with). The planner expected ${without.estimatedRows.toFixed(1)} rows of the ` +
      `full-text match without them and ${withStatistics.estimatedRows.toFixed(1)} with them, for ${without.actualRows.toFixed(1)} found; ` +
      (without.plan === withStatistics.plan ? `the same plan either way (${without.plan}).` : `plans: ${without.plan} without, ${withStatistics.plan} with.`)
    );
  });
  if (!server) findings.push('**Server Postgres:** skipped (TEST_DATABASE_URL is not set); every row above is the embedded database.');
  return {
    section: { name: 'retrieval-statistics', title: 'Retrieval: the word columns with and without planner statistics' },
    notes: [
      `A focused run of the retrieval benchmark (\`--statistics\`): only this comparison, at ${options.sizes.map(formatSize).join(' and ')} facts, ` +
        `not the full run's tables (see the section above), which it leaves as they were. Same synthetic facts, scopes, queries and searches as there.`,
      `Migration 0025 sets the statistics target of the ${wordColumns.length} columns that can hold people's words (@roster/memory's ` +
        `\`erasedPlaces\`: facts.content, facts.search_vector, fact_embeddings.embedding, messages.content and the rest) to 0, so ANALYZE ` +
        `no longer samples them, and the planner estimates conditions on them (such as \`search_vector @@ query\`) from its defaults. ` +
        `*without* is this version. *with* is as before the migration: the same columns set back to the default target (\`SET STATISTICS -1\`). ` +
        `Each configuration is applied in the benchmark's own database and then the whole database is analysed as its owner (as turns.ts ` +
        `and the vacuum job do; roster_ops may not); going back to *without* also removes the samples the *with* ANALYZE took ` +
        `(pg_clear_attribute_stats on Postgres 18, the embedded database; a delete from pg_statistic, as the superuser, on an older server). ` +
        `*word columns with statistics* is read from pg_stats after the ANALYZE (only facts and fact_embeddings hold rows here).`,
      `One database per size and kind, loaded once; ${options.rounds} rounds, each measuring both configurations one after the other, ` +
        `the first of the pair alternating between rounds; after each switch ${warmUp} warm-up queries of every search, then each search times ` +
        `all ${options.queries} queries. The percentiles pool every round's queries. Other people's tests share this machine's 2 cores: ` +
        `the *full scan (JS)* rows, whose statement has no condition on a word column, show how far noise alone moves a ratio in the same run.`,
    ],
    tables: [latency, planner],
    findings,
  };
}

/** Mostly paraphrases of the scope's own facts; a fifth from other scopes' facts. */
function makeQueries(facts: ReadonlyArray<{ scope: Scope; content: string }>, target: Scope, count: number, random: () => number): string[] {
  const own = facts.filter((fact) => fact.scope === target);
  const others = facts.filter((fact) => fact.scope !== target);
  return Array.from({ length: count }, (_, index) => {
    const source = index % 5 === 4 ? others : own;
    return paraphrase(random, source[Math.floor(random() * source.length)]!.content);
  });
}

async function timeEach<T>(queries: readonly string[], fn: (query: string) => Promise<T>): Promise<Timed & { values: T[]; durations: number[] }> {
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
async function fullScanSearch(database: Database, embedder: Embedder, scope: Scope, query: string): Promise<string[]> {
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
async function loadVectors(database: Database, model: string, scope: Scope | null): Promise<Map<string, Float64Array>> {
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

function exactNeighbours(vectors: Map<string, Float64Array>, query: readonly number[], k: number): Neighbours {
  const distances = Float64Array.from(vectors.values(), (vector) => 1 - dot(query, vector)).sort();
  const count = Math.min(k, distances.length);
  return {
    kthDistance: distances[count - 1] ?? Number.POSITIVE_INFINITY,
    medianDistance: distances[Math.floor(distances.length / 2)] ?? Number.NaN,
    k: count,
  };
}

/** recall@k against the exact answer; a result tied with the k-th nearest counts as found. */
function recallAt(ids: readonly string[], vectors: Map<string, Float64Array>, query: readonly number[], truth: Neighbours): number {
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
const armSettings = ['hnsw', 'exact', 'defaults', 'defaults-graph'] as const;
type ArmSettings = (typeof armSettings)[number];

async function applySettings(tx: { query(text: string): Promise<unknown> }, settings: ArmSettings): Promise<void> {
  if (settings === 'exact') await tx.query(`select set_config('enable_indexscan', 'off', true)`);
  else if (settings === 'hnsw') {
    await tx.query(`select set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', '100', true), set_config('enable_sort', 'off', true)`);
  } else if (settings === 'defaults-graph') {
    await tx.query(`select set_config('hnsw.iterative_scan', 'off', true), set_config('hnsw.ef_search', '40', true), set_config('enable_sort', 'off', true)`);
  }
}

/** The vector arm's statement run by hand under the scope's row-level security, for `limit` rows. */
async function vectorArmByHand(database: Database, embedder: Embedder, scope: Scope, vector: readonly number[], settings: ArmSettings): Promise<string[]> {
  return database.withScope(scope, async (tx) => {
    await applySettings(tx, settings);
    const { rows } = await tx.query<{ id: string }>(vectorArmSql(embedder.dimensions), [toSql(vector), embedder.model, limit]);
    return rows.map((row) => row.id);
  });
}

/** The plan nodes of the vector arm's statement under the given settings. */
async function vectorPlan(database: Database, embedder: Embedder, scope: Scope, vector: readonly number[], settings: ArmSettings): Promise<string> {
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
async function graphSearch(database: Database, embedder: Embedder, vector: readonly number[], efSearch: number): Promise<string[]> {
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
async function rebuildIndex(database: Database, embedder: Embedder, m: number, efConstruction: number): Promise<number> {
  const started = performance.now();
  await database.adminScope('bench: rebuild the HNSW index with other parameters', async (tx) => {
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

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function describePlan(node: PlanNode): string {
  const target = node['Index Name'] !== undefined ? ` ${node['Index Name'].replace(/^(fact_embeddings_hnsw)_\w+$/, '$1_…')}` : node['Relation Name'] !== undefined ? ` ${node['Relation Name']}` : '';
  const children = (node.Plans ?? []).map(describePlan);
  return `${node['Node Type']}${target}${children.length > 0 ? ` (${children.join(', ')})` : ''}`;
}

function formatSize(size: number): string {
  return size >= 1000 && size % 1000 === 0 ? `${size / 1000}k` : String(size);
}

/** The size, marked when it was measured on the server Postgres. */
function formatRow(result: { database: 'embedded' | 'server'; size: number }): string {
  return result.database === 'server' ? `${formatSize(result.size)} (server)` : formatSize(result.size);
}

function buildReport(results: SizeResult[], options: Options): BenchmarkReport {
  const verdict = (result: SizeResult, ok: boolean) => (result.size === 100_000 && result.database === 'embedded' ? (ok ? 'pass' : 'FAIL') : '–');
  const latency: ResultTable = {
    title: `Latency of one search, ms (${options.queries} queries, limit ${limit}, after ${warmUp} warm-up queries)`,
    columns: ['facts', 'scope', 'hybrid HNSW p50', 'p95', 'hybrid exact p50', 'p95', 'full scan (JS) p50', 'p95', 'speed-up', `≥ ${targetSpeedUp}× at 100k`],
    rows: results.map((result) => {
      const speedUp = result.fullScan.p50 / result.hybridHnsw.p50;
      return [
        formatRow(result),
        formatSize(result.scopeSize),
        formatMs(result.hybridHnsw.p50),
        formatMs(result.hybridHnsw.p95),
        formatMs(result.hybridExact.p50),
        formatMs(result.hybridExact.p95),
        formatMs(result.fullScan.p50),
        formatMs(result.fullScan.p95),
        `${speedUp.toFixed(1)}×`,
        verdict(result, speedUp >= targetSpeedUp),
      ];
    }),
  };
  const breakdown: ResultTable = {
    title: 'Where the time goes: p50 ms of each arm alone (memory.search with one mode) and together',
    columns: ['facts', 'full-text arm', 'vector arm HNSW', 'vector arm exact', 'hybrid HNSW', 'hybrid exact', 'full scan (JS)', 'full scan ÷ vector arm HNSW'],
    rows: results.map((result) => [
      formatRow(result),
      formatMs(result.fullTextArm.p50),
      formatMs(result.vectorHnsw.p50),
      formatMs(result.vectorExact.p50),
      formatMs(result.hybridHnsw.p50),
      formatMs(result.hybridExact.p50),
      formatMs(result.fullScan.p50),
      `${(result.fullScan.p50 / result.vectorHnsw.p50).toFixed(1)}×`,
    ]),
  };
  const recall: ResultTable = {
    title: 'Vector arm: recall@10 against the exact cosine top 10 of the scope, and rows returned of 10',
    columns: [
      'facts',
      'ours: HNSW + iterative scan',
      `≥ ${targetRecall} at 100k`,
      'ours: exact path (control)',
      'defaults, planner’s choice: rows',
      'recall',
      'defaults, graph walked: rows',
      'fewest',
      'none',
      'recall',
      'distance of 10th / median',
    ],
    rows: results.map((result) => {
      const free = result.defaults.defaults;
      const graph = result.defaults['defaults-graph'];
      return [
        formatRow(result),
        formatRatio(result.recallHnsw),
        verdict(result, result.recallHnsw >= targetRecall),
        formatRatio(result.recallExact),
        free.meanRows.toFixed(1),
        formatRatio(free.recall),
        graph.meanRows.toFixed(1),
        String(graph.minRows),
        `${graph.zeroRows}/${options.queries}`,
        formatRatio(graph.recall),
        `${result.distances.tenth.toFixed(3)} / ${result.distances.median.toFixed(3)}`,
      ];
    }),
  };
  const knobs: ResultTable = {
    title:
      'HNSW recall@10 by index and knob: the graph alone (all N vectors, no filter) by ef_search; the vector arm in the scope by ' +
      '`candidates` (search.ts derives ef_search from it), recall / p50 ms',
    columns: [
      'facts',
      'index',
      'build s',
      'graph alone, ef 40',
      'ef 400',
      ...candidateKnobs.map((candidates) => `scope, ${candidates} candidates${candidates === 40 ? ' (default)' : ''}`),
    ],
    rows: results.flatMap((result) =>
      result.indexes.map((index) => [
        formatRow(result),
        index.label,
        index.buildSeconds.toFixed(1),
        ...index.graphAlone.map((graph) => formatRatio(graph.recall)),
        ...index.knobs.map((knob) => `${formatRatio(knob.recall)} / ${formatMs(knob.latency.p50)}`),
      ]),
    ),
  };
  const setup: ResultTable = {
    title: 'Setup, not part of the comparison (seconds)',
    columns: ['facts', 'bulk load', 'HNSW index build (ensureEmbeddingModel)', 'analyze'],
    rows: results.map((result) => [
      formatRow(result),
      result.loadSeconds.toFixed(1),
      result.indexes[0]!.buildSeconds.toFixed(1),
      result.analyzeSeconds.toFixed(1),
    ]),
  };
  const plans: ResultTable = {
    title: "Plan of the vector arm's statement (EXPLAIN, first query)",
    columns: ['facts', ...armSettings],
    rows: results.map((result) => [formatRow(result), ...armSettings.map((settings) => result.plans[settings])]),
  };

  const findings: string[] = [];
  const largest = results.find((result) => result.size === 100_000 && result.database === 'embedded');
  if (largest !== undefined) {
    const speedUp = largest.fullScan.p50 / largest.hybridHnsw.p50;
    const graph = largest.defaults['defaults-graph'];
    const product = largest.indexes[0]!;
    const best = largest.indexes.flatMap((index) => index.knobs.map((knob) => ({ index, knob }))).find(({ knob }) => knob.recall >= targetRecall);
    const bestOfProduct = [...product.knobs].sort((a, b) => b.recall - a.recall)[0]!;
    findings.push(
      `**At 100k facts, speed:** hybrid search through HNSW is ${speedUp.toFixed(1)}× faster than the full scan at p50 ` +
        `(target ≥ ${targetSpeedUp}×: **${speedUp >= targetSpeedUp ? 'met' : 'missed'}**). Of its ${formatMs(largest.hybridHnsw.p50)} ms, ` +
        `the full-text arm alone takes ${formatMs(largest.fullTextArm.p50)} ms and the vector arm alone ${formatMs(largest.vectorHnsw.p50)} ms ` +
        `(${(largest.fullScan.p50 / largest.vectorHnsw.p50).toFixed(1)}× faster than the full scan on its own).`,
      `**At 100k facts, recall:** the vector arm's recall@10 with the default 40 candidates is ${formatRatio(largest.recallHnsw)} ` +
        `(target ≥ ${targetRecall}: **${largest.recallHnsw >= targetRecall ? 'met' : 'missed'}**); with search's own knob, \`candidates\`, ` +
        `the best is ${formatRatio(bestOfProduct.recall)} at ${bestOfProduct.candidates} candidates (${formatMs(bestOfProduct.latency.p50)} ms p50)` +
        (best === undefined
          ? ', and no index and knob tried reaches the target.'
          : `; the target is first reached with the ${best.index.label} index at ${best.knob.candidates} candidates ` +
            `(${formatRatio(best.knob.recall)}, ${formatMs(best.knob.latency.p50)} ms p50).`) +
        ` The graph alone, without any scope filter, finds ${formatRatio(product.graphAlone[0]!.recall)} of the true 10 at ef_search 40 ` +
        `and ${formatRatio(product.graphAlone[1]!.recall)} at 400: the loss is the graph's on these vectors (the 10th neighbour lies at ` +
        `cosine distance ${largest.distances.tenth.toFixed(2)}, the median fact at ${largest.distances.median.toFixed(2)}), not the scope filter's.`,
      `**The issue's failure mode:** with pgvector's defaults and the graph walked, the vector arm's statement returns ` +
        `${graph.meanRows.toFixed(1)} rows of ${limit} on average at 100k (fewest ${graph.minRows}; ${graph.zeroRows} of ${options.queries} ` +
        `queries got none); ours always returns ${limit}. Left to itself with the defaults, the planner does not walk the graph at all ` +
        `here: it sorts the scope (${largest.plans.defaults}), which is exact.`,
    );
  }
  const server = results.filter((result) => result.database === 'server');
  if (server.length === 0) {
    findings.push('**Server Postgres:** skipped (TEST_DATABASE_URL is not set); every row above is the embedded database.');
  } else {
    findings.push(
      `**Server Postgres beside the embedded one (hybrid HNSW p50):** ` +
        server
          .map((result) => {
            const embedded = results.find((other) => other.database === 'embedded' && other.size === result.size);
            return `${formatSize(result.size)}: ${formatMs(result.hybridHnsw.p50)} ms against ${embedded === undefined ? '–' : formatMs(embedded.hybridHnsw.p50)} ms`;
          })
          .join('; ') +
        '.',
    );
  }
  return {
    notes: [
      `Synthetic facts (\`<name> <verb> the <adjective> <object> in <place> on <day>\` and seven other patterns, ` +
        `a vocabulary of about 2,000 words, seeded so every run has the same facts) with vectors of the hashing embedder ` +
        `(\`hashing-256\`). At each size N, 10 agents with one person each hold N/10 facts apiece; every query runs in one ` +
        `(agent, person) scope, which holds 10% of the vectors, so HNSW must look past the other 90%. ` +
        `${options.queries} queries per size: 80% paraphrase a fact of the scope (small words dropped, a third of the rest ` +
        `dropped, order shuffled), 20% a fact of another scope.`,
      `*hybrid HNSW* is \`memory.search(scope, q, { limit: 10, exactBelow: 0 })\` (both arms, fusion, MMR; the vector ` +
        `arm through HNSW with \`hnsw.iterative_scan = relaxed_order\`); *hybrid exact* the same with the vector arm scanning ` +
        `the scope exactly (what search does by default for small scopes); *full scan (JS)* loads every vector of ` +
        `the scope (\`embedding::text\`), parses it, takes the top 10 dot products in JavaScript and reads those facts, as the ` +
        `systems memory replaces did. *speed-up* = full scan p50 ÷ hybrid HNSW p50. Recall compares the vector arm's top 10 ` +
        `(\`mode: 'vector'\`, no MMR) with the exact cosine top 10 of the scope computed in JavaScript from the stored vectors ` +
        `(a result tied with the 10th counts as found). *defaults* runs the vector arm's statement by hand under the same ` +
        `row-level security with pgvector's defaults (\`hnsw.iterative_scan = off\`, \`hnsw.ef_search = 40\`): once as the ` +
        `planner chooses, once with the graph walked (\`enable_sort = off\`, as search.ts sets it), which is the failure the ` +
        `issue quotes: HNSW hands back its 40 nearest of all scopes and the scope filter then drops most of them. ` +
        `*graph alone* asks the same index for the 10 nearest of all N vectors as owner, with no filter, against the exact ` +
        `10 of all N: it separates what the graph loses from what the filter loses.` +
        (options.rebuild === null
          ? ''
          : ` The second index row of each size is the same index rebuilt by hand with m = ${options.rebuild.m}, ` +
            `ef_construction = ${options.rebuild.efConstruction} (bench only; ensureEmbeddingModel builds it with m = 32, ef_construction = 128).`),
      `Everything runs on the embedded database (PGlite: Postgres in WebAssembly, single-threaded, in memory), one query ` +
        `at a time. Rows are bulk-loaded as owner in batches of 1,000, then the model is registered, which builds its HNSW ` +
        `index (m = 32, ef_construction = 128, as ensureEmbeddingModel builds it) with maintenance_work_mem = ${indexBuildMemory}; then ANALYZE.`,
    ],
    tables: [latency, breakdown, recall, knobs, setup, plans],
    findings,
  };
}
