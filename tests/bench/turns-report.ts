// The turns benchmark's records and its tables: what a run measured, and the report made of the runs.
import { formatMs, mean, percentile, type BenchmarkReport, type ResultTable } from './report.js';
import { statisticsConfigurations, statisticsLabels, wordColumns, type StatisticsConfiguration } from './statistics.js';
import type { StatementTimings } from './turn-statements.js';

/** The core's own share at p50, one conversation at a time, 10k facts (issue 21: 10 ms on a server Postgres, 15 on the embedded one). */
const targetCoreMs = { embedded: 15, server: 10 } as const;
const databaseNames = { embedded: 'the embedded database', server: 'a server Postgres' } as const;
/** A turn's round trips: route and store, read the prompt, store the reply (issue 21). */
const targetTransactions = 3;
const targetStatements = 15;
export const warmUpTurns = 6;
export const doors = ['core.handle', 'POST /api/chat'] as const;
export type Door = (typeof doors)[number];

export interface Options {
  facts: number[];
  concurrency: number[];
  turns: number;
  /** Only the comparison of the word columns without and with planner statistics. */
  statistics: boolean;
  /** Rounds of that comparison, each measuring both configurations. */
  rounds: number;
}

/** One turn as measured. */
export interface TurnRecord {
  ms: number;
  /** The engine's own time: its `run`, less the memory tools it called. */
  engineMs: number;
  /** What the message asks (`messageFor`): remember, recall or plain talk. */
  kind?: TurnKind;
  /** Counted for this turn alone, when no other turn overlapped it (one conversation at a time). */
  statements?: number;
  transactions?: number;
}

export type TurnKind = 'remember' | 'recall' | 'talk';
const turnKinds: readonly TurnKind[] = ['talk', 'remember', 'recall'];

/** The kind of the message `messageFor` writes for turn number `turn`. */
export function kindOf(turn: number): TurnKind {
  return turn % 4 === 0 ? 'remember' : turn % 4 === 1 ? 'recall' : 'talk';
}

export interface RunResult {
  database: 'embedded' | 'server';
  facts: number;
  door: Door;
  concurrency: number;
  turns: TurnRecord[];
  seconds: number;
  statements: number;
  transactions: number;
  /** One conversation through core.handle only: where its time went, statement by statement. */
  timings?: StatementTimings;
  /** In the statistics comparison: which configuration of the word columns it ran under. */
  configuration?: StatisticsConfiguration;
}

/** The statements that take most of a turn's time, per fact count: ms and calls per turn. */
function timeTable(runs: RunResult[], kind: 'embedded' | 'server'): ResultTable {
  const perTurn = (run: RunResult, ms: number) => ms / run.turns.length;
  const largest = runs[runs.length - 1]!;
  const labels = [...largest.timings!.statements.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 14).map(([label]) => label);
  const cell = (run: RunResult, label: string) => {
    const entry = run.timings!.statements.get(label);
    return entry === undefined ? '–' : `${formatMs(perTurn(run, entry.ms))} (${(entry.calls / run.turns.length).toFixed(2)})`;
  };
  const statementMs = (run: RunResult) => [...run.timings!.statements.values()].reduce((sum, entry) => sum + entry.ms, 0);
  const otherMs = (run: RunResult) =>
    [...run.timings!.statements.entries()].filter(([label]) => !labels.includes(label)).reduce((sum, [, entry]) => sum + entry.ms, 0);
  const turnMs = (run: RunResult) => run.turns.reduce((sum, turn) => sum + turn.ms, 0);
  return {
    title: `Where a turn’s time goes: ${databaseNames[kind]}, core.handle, one conversation; ms per turn (calls per turn) of each statement, by its opening words, the largest at the most facts first`,
    columns: ['statement', ...runs.map((run) => `${formatCount(run.facts)} facts`)],
    rows: [
      ...labels.map((label) => [`\`${label.replaceAll('`', "'").replaceAll('|', '\\|')}\``, ...runs.map((run) => cell(run, label))]),
      ['every other statement', ...runs.map((run) => formatMs(perTurn(run, otherMs(run))))],
      ['the layer around them: begin, role, scope settings, commit', ...runs.map((run) => formatMs(perTurn(run, run.timings!.transactionMs - statementMs(run))))],
      ['outside the database (the core’s JavaScript, the engine)', ...runs.map((run) => formatMs(perTurn(run, turnMs(run) - run.timings!.transactionMs)))],
      ['a whole turn, mean', ...runs.map((run) => formatMs(perTurn(run, turnMs(run))))],
    ],
  };
}

function formatCount(size: number): string {
  return size >= 1000 && size % 1000 === 0 ? `${size / 1000}k` : String(size);
}

export function buildReport(results: RunResult[], options: Options, server: boolean): BenchmarkReport {
  const core = (turn: TurnRecord) => turn.ms - turn.engineMs;
  const table = (kind: 'embedded' | 'server'): ResultTable => ({
    title: `${kind === 'embedded' ? 'Embedded database (PGlite, in process)' : 'Server Postgres (TEST_DATABASE_URL)'}: one row per door, facts in the scope and conversations at once`,
    columns: ['door', 'facts in scope', 'at once', 'turns', 'p50 ms', 'p95 ms', 'turns/s', 'core share p50 ms', 'engine p50 ms', 'SQL statements per turn', 'transactions per turn'],
    rows: results
      .filter((result) => result.database === kind)
      .map((result) => [
        result.door,
        formatCount(result.facts),
        String(result.concurrency),
        String(result.turns.length),
        formatMs(percentile(result.turns.map((turn) => turn.ms), 50)),
        formatMs(percentile(result.turns.map((turn) => turn.ms), 95)),
        (result.turns.length / result.seconds).toFixed(1),
        formatMs(percentile(result.turns.map(core), 50)),
        formatMs(percentile(result.turns.map((turn) => turn.engineMs), 50)),
        (result.statements / result.turns.length).toFixed(1),
        (result.transactions / result.turns.length).toFixed(1),
      ]),
  });
  const tables = [table('embedded'), ...(server ? [table('server')] : [])];
  const findings: string[] = [];
  for (const kind of ['embedded', 'server'] as const) {
    const timedRuns = results.filter((result) => result.database === kind && result.timings !== undefined);
    if (timedRuns.length > 0) tables.push(timeTable(timedRuns, kind));
    const goal = results.find((result) => result.database === kind && result.door === 'core.handle' && result.concurrency === 1 && result.facts === 10_000);
    if (goal === undefined) continue;
    const share = percentile(goal.turns.map(core), 50);
    findings.push(
      `**Goal, the core's own share ≤ ${targetCoreMs[kind]} ms at p50 with 10k facts on ${databaseNames[kind]} (core.handle, one conversation):** ` +
        `${formatMs(share)} ms (**${share <= targetCoreMs[kind] ? 'met' : 'missed'}**); the engine's own p50 is ${formatMs(percentile(goal.turns.map((turn) => turn.engineMs), 50))} ms, ` +
        `${(goal.statements / goal.turns.length).toFixed(1)} SQL statements in ${(goal.transactions / goal.turns.length).toFixed(1)} transactions per turn.`,
    );
  }
  const alone = results.filter((result) => result.database === 'embedded' && result.door === 'core.handle' && result.concurrency === 1);
  if (alone.length > 0) {
    const perKind = turnKinds.map((kind) => {
      const turns = alone.flatMap((result) => result.turns).filter((turn) => turn.kind === kind && turn.statements !== undefined);
      const statements = mean(turns.map((turn) => turn.statements!));
      const transactions = mean(turns.map((turn) => turn.transactions!));
      return `${kind === 'talk' ? 'plain talk' : kind === 'remember' ? '`remember that …` (the engine calls `remember`)' : '`what do you know about …` (the engine calls `recall`)'}: ${statements.toFixed(1)} statements in ${transactions.toFixed(1)} transactions`;
    });
    findings.push(
      `**Goal, ≤ ${targetTransactions} transactions and ≤ ${targetStatements} statements per turn, by kind of turn** (core.handle, one conversation at a time, ` +
        `so each turn is counted alone; every fact count): ${perKind.join('; ')}.`,
    );
  }
  const http = results.filter((result) => result.database === 'embedded' && result.door === 'POST /api/chat' && result.concurrency === 1);
  const direct = results.filter((result) => result.database === 'embedded' && result.door === 'core.handle' && result.concurrency === 1);
  if (http.length > 0 && direct.length > 0) {
    const extra = mean(http.map((result, index) => percentile(result.turns.map((turn) => turn.ms), 50) - percentile(direct[index]!.turns.map((turn) => turn.ms), 50)));
    findings.push(
      `**What the HTTP door adds:** ${formatMs(extra)} ms at p50 on average over the fact counts, one conversation at a time (the session's lookup, ` +
        `the body's validation, the stream of server-sent events and the socket on loopback).`,
    );
  }
  if (!server) findings.push('Server Postgres: skipped (TEST_DATABASE_URL is not set).');
  return {
    notes: [
      `One agent (offline engine) and ${Math.max(...options.concurrency)} people per door; each conversation is one person's ` +
        `web conversation with the agent (one conversation per person, as the web page has it) and says its turns one after ` +
        `another; *at once* conversations run concurrently. A quarter of the turns are \`remember that …\` (a fact written ` +
        `with its vector and audit event), a quarter \`what do you know about …\` (a recall), half plain talk, in every row (the kinds take turns across ` +
        `conversations as well as within one, so that a row whose conversations say two turns each has the same mix); every turn ` +
        `stores the message, reads the agent's lessons, searches memory for the prompt, reads the history, runs the engine, ` +
        `stores the reply and writes the follow-up jobs to the outbox (no worker runs). *facts in scope*: synthetic ` +
        `agent-wide facts (tests/bench/synthetic.ts) with hashing vectors, bulk-loaded before the turns and analyzed as the ` +
        `vacuum job does; every person's private scope reads them, so each conversation's search looks through that many ` +
        `facts (at 10k the scope is all of the table's vectors, so the vector arm goes through HNSW: search's \`prefersGraph\`; ` +
        `at 1k it scans them exactly). *Where a turn's time goes* times each statement from JavaScript, as the counter ` +
        `sees it (its round trip included), in the one-conversation core.handle rows only, so that no two turns overlap.`,
      `*core.handle* calls the core in process, as the web route does; *POST /api/chat* is the real server (Fastify) on ` +
        `loopback (a new connection per request), a signed-in session cookie and CSRF header per person, the whole event stream read. At least ` +
        `${options.turns} turns per row (each conversation at least 2), after ${warmUpTurns} warm-up turns per door and, before each row, one turn in each ` +
        `of its conversations, all at once (a service with that many conversations going has started them and has its pool's ` +
        `connections open: the row measures turns, not the start of a burst). ` +
        `*core share* is a turn's time less the engine's own time (the offline engine's \`run\` less the memory tools it ` +
        `called, which are the core's work); the offline engine needs no model, so almost all of a turn is the core's. ` +
        `*SQL statements per turn* are counted by a wrapper around the Database (each statement a transaction runs, plus ` +
        `begin, the scope's role and settings (one \`select set_config(…)\`; an admin transaction's \`set local role\`) and ` +
        `commit that the layer sends around it; the first two go in one round trip, and a graph search's own settings go in ` +
        `the scope's statement), divided by the turns of the row.`,
      `The embedded database is one PGlite session in the benchmark's process: concurrent conversations take turns on it, ` +
        `so latency grows with the conversations at once while turns per second stay about flat.`,
    ],
    tables,
    findings,
  };
}


/** The runs of one row and configuration, every round's turns together. */
function poolRuns(runs: RunResult[]): RunResult {
  const first = runs[0]!;
  const timings: StatementTimings | undefined = first.timings === undefined ? undefined : { statements: new Map(), transactionMs: 0 };
  for (const run of runs) {
    if (timings === undefined || run.timings === undefined) continue;
    timings.transactionMs += run.timings.transactionMs;
    for (const [label, entry] of run.timings.statements) {
      const pooled = timings.statements.get(label) ?? { calls: 0, ms: 0 };
      pooled.calls += entry.calls;
      pooled.ms += entry.ms;
      timings.statements.set(label, pooled);
    }
  }
  return {
    ...first,
    ...(timings === undefined ? {} : { timings }),
    turns: runs.flatMap((run) => run.turns),
    seconds: runs.reduce((sum, run) => sum + run.seconds, 0),
    statements: runs.reduce((sum, run) => sum + run.statements, 0),
    transactions: runs.reduce((sum, run) => sum + run.transactions, 0),
  };
}

export function buildStatisticsReport(results: RunResult[], options: Options, sampled: Map<string, Record<StatisticsConfiguration, number>>, server: boolean): BenchmarkReport {
  const rows: Array<{ kind: 'embedded' | 'server'; facts: number; door: Door; concurrency: number; pooled: Record<StatisticsConfiguration, RunResult> }> = [];
  for (const kind of ['embedded', 'server'] as const) {
    for (const facts of options.facts) {
      for (const door of doors) {
        for (const concurrency of options.concurrency) {
          const of = (configuration: StatisticsConfiguration) =>
            results.filter((result) => result.database === kind && result.facts === facts && result.door === door && result.concurrency === concurrency && result.configuration === configuration);
          if (of('without').length === 0 || of('with').length === 0) continue;
          rows.push({ kind, facts, door, concurrency, pooled: { without: poolRuns(of('without')), with: poolRuns(of('with')) } });
        }
      }
    }
  }
  const p = (run: RunResult, q: number) => percentile(run.turns.map((turn) => turn.ms), q);
  const perSecond = (run: RunResult) => (run.turns.length / run.seconds).toFixed(1);
  const latency: ResultTable = {
    title:
      `Turns with the word columns without statistics (this version) and with them (as before migration 0025): ` +
      `p50 and p95 of every turn of ${options.rounds} rounds per configuration`,
    columns: ['database', 'door', 'facts in scope', 'at once', 'turns each', 'without: p50 ms', 'p95 ms', 'turns/s', 'with: p50 ms', 'p95 ms', 'turns/s', 'p50 with ÷ without'],
    rows: rows.map(({ kind, facts, door, concurrency, pooled }) => [
      kind,
      door,
      formatCount(facts),
      String(concurrency),
      String(pooled.without.turns.length),
      formatMs(p(pooled.without, 50)),
      formatMs(p(pooled.without, 95)),
      perSecond(pooled.without),
      formatMs(p(pooled.with, 50)),
      formatMs(p(pooled.with, 95)),
      perSecond(pooled.with),
      `${(p(pooled.with, 50) / p(pooled.without, 50)).toFixed(2)}×`,
    ]),
  };
  const fullTextMs = (run: RunResult) => {
    const entries = [...(run.timings?.statements.entries() ?? [])].filter(([label]) => label.includes('roster_search_words'));
    return entries.reduce((sum, [, entry]) => sum + entry.ms, 0) / run.turns.length;
  };
  const statementsMs = (run: RunResult) => [...(run.timings?.statements.values() ?? [])].reduce((sum, entry) => sum + entry.ms, 0) / run.turns.length;
  const statementTable: ResultTable = {
    title:
      'The full-text arm’s statement (`roster_search_words`, where the planner used `search_vector`’s statistics) and every statement, ' +
      'core.handle, one conversation: ms per turn (the mean), and the word columns holding statistics after the ANALYZE',
    columns: ['database', 'facts in scope', 'configuration', 'word columns with statistics', 'roster_search_words ms per turn', 'all statements ms per turn', 'a whole turn, mean ms', 'SQL statements per turn'],
    rows: rows
      .filter((row) => row.door === 'core.handle' && row.concurrency === 1)
      .flatMap(({ kind, facts, pooled }) =>
        statisticsConfigurations.map((configuration) => {
          const run = pooled[configuration];
          return [
            kind,
            formatCount(facts),
            statisticsLabels[configuration],
            `${sampled.get(`${kind} ${facts}`)?.[configuration] ?? '–'} of ${wordColumns.length}`,
            formatMs(fullTextMs(run)),
            formatMs(statementsMs(run)),
            formatMs(mean(run.turns.map((turn) => turn.ms))),
            (run.statements / run.turns.length).toFixed(1),
          ];
        }),
      ),
  };
  const findings: string[] = [];
  const ratios = rows.map((row) => p(row.pooled.with, 50) / p(row.pooled.without, 50));
  if (ratios.length > 0) {
    findings.push(
      `**p50 with the word columns' statistics ÷ without them:** from ${Math.min(...ratios).toFixed(2)}× to ${Math.max(...ratios).toFixed(2)}× ` +
        `over the ${ratios.length} rows (median ${percentile(ratios, 50).toFixed(2)}×).`,
    );
  }
  if (!server) findings.push('Server Postgres: skipped (TEST_DATABASE_URL is not set).');
  return {
    section: { name: 'turns-statistics', title: 'Turns: the word columns with and without planner statistics' },
    notes: [
      `A focused run of the turns benchmark (\`--statistics\`): only this comparison, at ${options.facts.map(formatCount).join(' and ')} facts in the scope ` +
        `and ${options.concurrency.join(' and ')} conversation${options.concurrency.length === 1 && options.concurrency[0] === 1 ? '' : 's'} at once, ` +
        `not the full run's tables (see the section above), which it leaves as they were. Same agent, people, messages, doors and engine as there.`,
      `Migration 0025 sets the statistics target of the ${wordColumns.length} columns that can hold people's words (@roster/memory's ` +
        `\`erasedPlaces\`: facts.content, facts.search_vector, messages.content, outbox.payload and the rest) to 0, so ANALYZE no longer ` +
        `samples them, and the planner estimates conditions on them from its defaults. *without* is this version; *with* is as before ` +
        `the migration: the same columns set back to the default target (\`SET STATISTICS -1\`). Each configuration is applied in the ` +
        `benchmark's own database, then the whole database is analysed as its owner, as after the bulk load (roster_ops may not); going ` +
        `back to *without* also removes the samples the *with* ANALYZE took (pg_clear_attribute_stats on Postgres 18, the embedded ` +
        `database; a delete from pg_statistic, as the superuser, on an older server).`,
      `One fixture per database and fact count; ${options.rounds} rounds, each measuring both configurations one after the other, the ` +
        `first of the pair alternating between rounds; after each switch ${warmUpTurns} warm-up turns per door, then every door and ` +
        `concurrency says at least ${options.turns} turns of new messages. The tables grow as the rounds go (messages, facts remembered, ` +
        `outbox rows), equally for both configurations. Other people's tests share this machine's 2 cores, so one row's ratio moves ` +
        `by 10–20% on noise alone: an effect of the statistics would hold across fact counts, doors and databases.`,
    ],
    tables: [latency, statementTable],
    findings,
  };
}
