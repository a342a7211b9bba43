// The retrieval benchmark's records, and the report made of them.
import { formatMs, formatRatio, type BenchmarkReport, type ResultTable } from './report.js';
import type { Options } from './retrieval.js';
import { type ArmSettings, armSettings, candidateKnobs, indexBuildMemory, limit, targetRecall, targetSpeedUp, warmUp } from './retrieval-fixture.js';

export interface Timed {
  p50: number;
  p95: number;
}

export interface KnobResult {
  candidates: number;
  recall: number;
  latency: Timed;
}

/** How one HNSW index does: the graph alone, and the vector arm under the scope filter. */
export interface IndexResult {
  label: string;
  buildSeconds: number;
  /** recall@10 over all N vectors, no scope filter, by ef_search. */
  graphAlone: Array<{ efSearch: number; recall: number }>;
  /** The vector arm through memory.search, by candidates. */
  knobs: KnobResult[];
}

export interface SizeResult {
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

export interface RowsReturned {
  meanRows: number;
  minRows: number;
  zeroRows: number;
  recall: number;
}


export function formatSize(size: number): string {
  return size >= 1000 && size % 1000 === 0 ? `${size / 1000}k` : String(size);
}

/** The size, marked when it was measured on the server Postgres. */
export function formatRow(result: { database: 'embedded' | 'server'; size: number }): string {
  return result.database === 'server' ? `${formatSize(result.size)} (server)` : formatSize(result.size);
}

export function buildReport(results: SizeResult[], options: Options): BenchmarkReport {
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
      `Every search is asked with \`includeIrrelevant: true\`: this measures ranking, and the relevance floor would hide ` +
        `results (a paraphrase with a third of its words dropped often falls under it; the never-said bench measures the floor). ` +
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
