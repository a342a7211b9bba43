// The retrieval benchmark's comparison of the word columns without and with planner statistics (`--statistics`).
import type { Database, Scope } from '@roster/db';
import { createMemory } from '@roster/memory';
import { testInstallationKey } from '@roster/config/testing';
import { formatMs, formatRatio, mean, percentile, progress, type BenchmarkReport, type ResultTable } from './report.js';
import { applyStatistics, roundOrder, statisticsConfigurations, statisticsLabels, wordColumns, type StatisticsConfiguration } from './statistics.js';
import { createRandom } from './synthetic.js';
import type { Options } from './retrieval.js';
import { alwaysExact, describePlan, exactNeighbours, fullScanSearch, limit, loadSize, loadVectors, makeQueries, type PlanNode, recallAt, seed, timeEach, warmUp } from './retrieval-fixture.js';
import { formatRow, formatSize } from './retrieval-report.js';

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

export async function runStatistics(options: Options): Promise<BenchmarkReport> {
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
      'hybrid HNSW': (query) => memory.search(target, query, { limit, exactBelow: 0, includeIrrelevant: true }),
      'hybrid exact': (query) => memory.search(target, query, { limit, exactBelow: alwaysExact, includeIrrelevant: true }),
      'full-text arm': (query) => memory.search(target, query, { limit, mode: 'full-text', includeIrrelevant: true }),
      'vector arm HNSW': (query) => memory.search(target, query, { limit, mode: 'vector', diversity: 1, candidates: 40, exactBelow: 0, includeIrrelevant: true }),
      'vector arm exact': (query) => memory.search(target, query, { limit, mode: 'vector', diversity: 1, candidates: 40, exactBelow: alwaysExact, includeIrrelevant: true }),
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
 * the full-text match of roster_search_ranked (0024; roster_search_words, 0033, asks it word by word) run by hand as
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
