// The jobs benchmark's knobs, its records, and the report made of them.
import { formatDuration, type BenchmarkReport, type ResultTable } from './report.js';
import type { StatementTimes } from './jobs-timing.js';

/** Rows per INSERT while loading facts. */
export const loadBatch = 10_000;
/** fade's and the relay's own defaults, named here to show them in the tables. */
export const fadeBatch = 500;
export const relayBatch = 200;
/** How many times each part of an audit event is repeated inside Postgres. */
export const profileRepeats = 2_000;

export interface Options {
  sizes: number[];
  /** Seconds one fade may run before it is stopped and its rate taken from what it did. */
  budget: number;
  agents: number;
  jobs: number;
  target: number;
  redis: string;
}

export interface FadeResult {
  size: number;
  /** True when the fade ran out of its time budget and was stopped after a batch: its rate is that of the facts it did. */
  stopped: boolean;
  agents: number;
  loadSeconds: number;
  fadeSeconds: number;
  faded: number;
  batches: number;
  times: StatementTimes;
  /** The plan of fade's first batch statement, as EXPLAIN ANALYZE runs it (then rolled back), and its time. */
  plan: { nodes: string; ms: number };
  /** The same with an index that orders eligible facts by recorded_at, made in the same rolled-back transaction (bench only). */
  planWithIndex: { nodes: string; ms: number };
  /** Mean µs per repetition of each part of an audit event, inside Postgres. */
  parts: Array<{ part: string; micros: number }>;
  /**
   * Mean µs from JavaScript: a `select 1`; one event per `audit.append` (its
   * keyed hash, then two statements: the heads and the insert); and per
   * event, a batch of them per `audit.appendMany` (as fade sends them).
   */
  roundTrip: { select: number; appendEvent: number; appendEventsPerEvent: number };
}


export interface RelayResult {
  jobs: number;
  rounds: number;
  /** Seconds of each round, per method. */
  methods: Array<{ method: string; seconds: number[]; note: string }>;
  relayTimes: StatementTimes;
}

function formatCount(value: number): string {
  return value >= 1_000_000 && value % 1_000_000 === 0 ? `${value / 1_000_000}M` : value >= 1000 && value % 1000 === 0 ? `${value / 1000}k` : String(value);
}

function formatRate(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Mean of the first and of the last tenth of a series (at least one value each). */
function tenths(values: readonly number[]): { first: number; last: number } {
  const size = Math.max(1, Math.floor(values.length / 10));
  const mean = (part: readonly number[]) => part.reduce((sum, value) => sum + value, 0) / part.length;
  return { first: mean(values.slice(0, size)), last: mean(values.slice(-size)) };
}

export const eventsKind = 'audit events: roster_insert_events, one statement per batch';
export const headsKind = 'audit chain heads: roster_event_heads (locks the chains), one statement per batch';
export const updateKind = 'select + update a batch of facts';

export function buildReport(fades: FadeResult[], relay: RelayResult | undefined, options: Options): BenchmarkReport {
  const tables: ResultTable[] = [];
  const findings: string[] = [];
  if (fades.length > 0) {
    tables.push({
      title: `fade(database, audit): every fact eligible, batches of ${fadeBatch}, one audit event per fact`,
      columns: ['facts', 'agents', 'faded', 'batches', 'fade', 'rows/s', 'ms per fact', 'ms per batch: first tenth', 'last tenth', 'bulk load (setup)'],
      rows: fades.map((result) => {
        // The batches that faded something (a last, empty one ends the loop when N is a multiple of the batch size).
        const batches = tenths(result.times.eachTransaction.slice(0, result.batches));
        return [
          formatCount(result.size),
          formatCount(result.agents),
          result.stopped ? `${result.faded.toLocaleString('en-US')} (stopped at the ${formatDuration(options.budget)} budget)` : 'all',
          String(result.batches),
          formatDuration(result.fadeSeconds),
          formatRate(result.faded / result.fadeSeconds),
          ((result.fadeSeconds * 1000) / result.faded).toFixed(3),
          batches.first.toFixed(0),
          batches.last.toFixed(0),
          formatDuration(result.loadSeconds),
        ];
      }),
    });
    tables.push({
      title:
        'Plan of fade’s first batch (EXPLAIN ANALYZE of its statement on the loaded table, rolled back); and with an index on ' +
        "(recorded_at) where trust in ('active', 'candidate'), made for the measurement only and rolled back with it",
      columns: ['facts', 'indexes', 'plan (outermost first)', 'ms'],
      rows: fades.flatMap((result) => [
        [formatCount(result.size), 'as migrated', result.plan.nodes, result.plan.ms.toFixed(0)],
        [formatCount(result.size), '+ (recorded_at) partial index', result.planWithIndex.nodes, result.planWithIndex.ms.toFixed(0)],
      ]),
    });
    tables.push({
      title: 'Where fade’s time goes: the statements it sends, timed from JavaScript, and their share of its wall time',
      columns: ['facts', 'statement', 'calls', 'total s', 'ms per call', 'first tenth', 'last tenth', 'share'],
      rows: fades.flatMap((result) => {
        const wall = result.fadeSeconds * 1000;
        const statements = [...result.times.byKind.entries()].sort((a, b) => b[1].ms - a[1].ms);
        const inStatements = statements.reduce((sum, [, entry]) => sum + entry.ms, 0);
        return [
          ...statements.map(([kind, entry]) => {
            // Per batch: leave out the last, empty call that ends the loop.
            const drift = tenths(kind === updateKind ? entry.each.slice(0, result.batches) : entry.each);
            return [
              formatCount(result.size),
              kind,
              entry.calls.toLocaleString('en-US'),
              (entry.ms / 1000).toFixed(1),
              (entry.ms / entry.calls).toFixed(3),
              drift.first.toFixed(3),
              drift.last.toFixed(3),
              `${((100 * entry.ms) / wall).toFixed(1)}%`,
            ];
          }),
          [
            formatCount(result.size),
            'begin, commit, pool, JavaScript between statements',
            result.times.transactions.toLocaleString('en-US'),
            ((wall - inStatements) / 1000).toFixed(1),
            '–',
            '–',
            '–',
            `${((100 * (wall - inStatements)) / wall).toFixed(1)}%`,
          ],
        ];
      }),
    });
    tables.push({
      title: `Inside one audit event: each part repeated ${profileRepeats.toLocaleString('en-US')} times in a DO block, µs each; and round trips from JavaScript, µs`,
      columns: [
        'facts (events in the agent’s chain)',
        ...fades[0]!.parts.map((part) => part.part),
        'from JS: select 1',
        'from JS: one audit.append (keyed hash, heads, insert)',
        `from JS: audit.appendMany of ${fadeBatch}, per event`,
      ],
      rows: fades.map((result) => [
        `${formatCount(result.size)} (${formatCount(Math.round(result.size / result.agents))})`,
        ...result.parts.map((part) => part.micros.toFixed(1)),
        result.roundTrip.select.toFixed(1),
        result.roundTrip.appendEvent.toFixed(1),
        result.roundTrip.appendEventsPerEvent.toFixed(1),
      ]),
    });

    const largest = fades[fades.length - 1]!;
    const perFact = (result: FadeResult) => result.fadeSeconds / result.faded;
    const rates = fades.map((result) => `${formatRate(result.faded / result.fadeSeconds)} rows/s at ${formatCount(result.size)}`).join(', ');
    const measuredTarget = fades.find((result) => result.size === options.target);
    let atTarget: string;
    if (measuredTarget !== undefined && !measuredTarget.stopped) {
      atTarget = `${formatCount(options.target)} facts across ${formatCount(measuredTarget.agents)} agents faded in ${formatDuration(measuredTarget.fadeSeconds)}, measured.`;
    } else if (measuredTarget !== undefined) {
      const batches = tenths(measuredTarget.times.eachTransaction.slice(0, measuredTarget.batches));
      atTarget =
        `At ${formatCount(options.target)} facts across ${formatCount(measuredTarget.agents)} agents, fade was stopped at its ${formatDuration(options.budget)} budget ` +
        `after ${measuredTarget.faded.toLocaleString('en-US')} facts (${formatRate(measuredTarget.faded / measuredTarget.fadeSeconds)} rows/s); at that rate the whole run ` +
        `would take about ${formatDuration(options.target / (measuredTarget.faded / measuredTarget.fadeSeconds))}` +
        ` (a batch took ${batches.first.toFixed(0)} ms on average in the first tenth of the measured part and ${batches.last.toFixed(0)} ms in the last` +
        `${batches.last < batches.first * 0.9 ? ': batches get faster as fewer facts remain eligible, so the rest would go faster than this estimate' : ''}).` +
        ` Cost per fact by size: ${fades.map((result) => `${(((result.fadeSeconds * 1000) / result.faded)).toFixed(3)} ms at ${formatCount(result.size)}`).join(', ')}.`;
    } else {
      const linear = options.target * perFact(largest);
      const previous = fades.length > 1 ? fades[fades.length - 2]! : undefined;
      let grown = '';
      if (previous !== undefined && previous.size < largest.size) {
        // The cost per fact grew by `growth` over the last measured step of size; assume it keeps growing at that pace.
        const growth = perFact(largest) / perFact(previous);
        const steps = Math.log(options.target / largest.size) / Math.log(largest.size / previous.size);
        const projected = linear * growth ** steps;
        grown =
          ` The cost per fact went from ${(perFact(previous) * 1000).toFixed(3)} ms at ${formatCount(previous.size)} to ${(perFact(largest) * 1000).toFixed(3)} ms ` +
          `at ${formatCount(largest.size)} (×${growth.toFixed(2)})` +
          (growth > 1.05 ? `; if it keeps growing at that pace, about ${formatDuration(projected)}.` : ': it did not grow with the table.');
      }
      atTarget =
        `${formatCount(options.target)} facts across ${formatCount(options.agents)} agents were not run; at ${formatCount(largest.size)}'s rate they would take ` +
        `about ${formatDuration(linear)}.${grown}`;
    }
    findings.push(`**Fade throughput:** ${rates}. ${atTarget}`);

    const wall = largest.fadeSeconds * 1000;
    const shares = [...largest.times.byKind.entries()]
      .sort((a, b) => b[1].ms - a[1].ms)
      .map(([kind, entry]) => `${kind} ${((100 * entry.ms) / wall).toFixed(0)}% (${(entry.ms / entry.calls).toFixed(1)} ms per call, ${(entry.ms / largest.faded).toFixed(3)} ms per fact)`);
    const part = (prefix: string) => largest.parts.find((candidate) => candidate.part.startsWith(prefix))!.micros;
    const base = part('loop');
    const first = fades[0]!;
    const update = (result: FadeResult) => result.times.byKind.get(updateKind);
    const events = (result: FadeResult) => {
      const inserts = result.times.byKind.get(eventsKind);
      const heads = result.times.byKind.get(headsKind);
      return inserts === undefined && heads === undefined ? undefined : { ms: (inserts?.ms ?? 0) + (heads?.ms ?? 0) };
    };
    const perFactMs = (entry: { ms: number } | undefined, result: FadeResult) => (entry?.ms ?? 0) / result.faded;
    const sortsAll = largest.plan.nodes.includes('Sort') && /Seq Scan on facts/.test(largest.plan.nodes);
    const joinsByScan = /Hash Join ← Seq Scan on facts/.test(largest.plan.nodes);
    findings.push(
      `**The batch statement:** at ${formatCount(largest.size)} its first batch plans as ${largest.plan.nodes} and takes ${largest.plan.ms.toFixed(0)} ms ` +
        `under EXPLAIN ANALYZE.` +
        (sortsAll
          ? ` To take the oldest ${fadeBatch} it reads and sorts every eligible fact: \`facts_fade_idx\` is on (trust, recorded_at), which gives no ` +
            `recorded_at order across the two trust values of \`trust in ('active', 'candidate')\`, so the planner scans the table and sorts.`
          : '') +
        (joinsByScan ? ` The update then finds the ${fadeBatch} chosen rows with a hash join over another full scan of facts.` : '') +
        (sortsAll || joinsByScan ? ` Each batch costs in proportion to the table, so a whole fade grows with its square.` : '') +
        ` With an index on (recorded_at) where trust in ('active', 'candidate') (made for the measurement, not in the migrations), the same batch ` +
        `plans as ${largest.planWithIndex.nodes} and takes ${largest.planWithIndex.ms.toFixed(0)} ms.`,
    );
    findings.push(
      `**Where the time goes (${formatCount(largest.size)}${largest.stopped ? ', the part measured' : ''}):** of fade's ${formatDuration(largest.fadeSeconds)}, ${shares.join('; ')}; ` +
        `the rest is begin, commit and JavaScript. Per fact, from ${formatCount(first.size)} to ${formatCount(largest.size)} facts, the batch update went from ` +
        `${perFactMs(update(first), first).toFixed(3)} to ${perFactMs(update(largest), largest).toFixed(3)} ms and the audit events from ` +
        `${perFactMs(events(first), first).toFixed(3)} to ${perFactMs(events(largest), largest).toFixed(3)} ms (heads and inserts together). ` +
        `Inside Postgres, storing one event through \`roster_insert_events\` costs ${(part('roster_insert_events') - base).toFixed(0)} µs at ` +
        `${formatCount(largest.size)} (${(first.parts.find((candidate) => candidate.part.startsWith('roster_insert_events'))!.micros - first.parts[0]!.micros).toFixed(0)} µs at ` +
        `${formatCount(first.size)}); reading a chain's head through \`roster_event_heads\` ${(part('roster_event_heads') - base).toFixed(1)} µs, of which the advisory lock ` +
        `is ${(part('advisory') - base).toFixed(1)} µs and the last-row lookup ${(part('last event') - base).toFixed(1)} µs (the unique (agent_id, seq) index). ` +
        `From JavaScript, one \`audit.append\` (the keyed hash, then the heads and the insert) costs ${largest.roundTrip.appendEvent.toFixed(0)} µs ` +
        `(a bare \`select 1\` ${largest.roundTrip.select.toFixed(0)} µs); ${fadeBatch} at a time through \`audit.appendMany\`, as fade does, ` +
        `${largest.roundTrip.appendEventsPerEvent.toFixed(0)} µs per event.`,
    );
  }
  if (relay !== undefined) {
    tables.push({
      title: `Relay throughput: ${relay.jobs.toLocaleString('en-US')} jobs to BullMQ on one Redis (extract, embed, harvest in turn), ${relay.rounds} rounds each, interleaved`,
      columns: ['method', 'jobs', 'median s', 'jobs/s (median)', 'jobs/s (slowest – fastest round)', 'how'],
      rows: relay.methods.map((method) => {
        const rates = method.seconds.map((seconds) => relay.jobs / seconds);
        return [
          method.method,
          relay.jobs.toLocaleString('en-US'),
          median(method.seconds).toFixed(2),
          formatRate(relay.jobs / median(method.seconds)),
          `${formatRate(Math.min(...rates))} – ${formatRate(Math.max(...rates))}`,
          method.note,
        ];
      }),
    });
    const rate = (prefix: string) => {
      const method = relay.methods.find((candidate) => candidate.method.startsWith(prefix))!;
      return relay.jobs / median(method.seconds);
    };
    const relaySeconds = relay.methods[0]!.seconds.reduce((sum, seconds) => sum + seconds, 0);
    const inPostgres = [...relay.relayTimes.byKind.values()].reduce((sum, entry) => sum + entry.ms, 0) / 1000;
    findings.push(
      `**Relay:** ${formatRate(rate('relayOutbox'))} jobs/s (median of ${relay.rounds}), against ${formatRate(rate('queue.add in a loop'))} for \`queue.add\` ` +
        `in a loop and ${formatRate(rate(`queue.addBulk, chunks of ${relayBatch}`))} for \`addBulk\` in chunks of ${relayBatch}. ` +
        `${((100 * inPostgres) / relaySeconds).toFixed(0)}% of the relay's time is its Postgres statements (read a batch, mark it); the rest is ` +
        `one awaited \`add\` per row, as in the loop.`,
    );
  }
  return {
    notes: [
      `*Fade:* at each size, the facts are spread evenly over ${formatCount(options.agents)} agents (one person each), all \`active\`, ` +
        `\`general\`, recorded 60 days ago and never used, so every one is eligible; synthetic content, bulk-loaded as owner ` +
        `${loadBatch.toLocaleString('en-US')} rows per statement, then ANALYZE. Then \`fade(database, audit)\` from \`@roster/memory\` as the nightly job ` +
        `calls it (45 days, batches of ${fadeBatch}), timed; each statement it sends is timed from JavaScript by kind (the database is ` +
        `wrapped to time calls, each passed on unchanged). Afterwards every fact is checked to be faded with one event each. ` +
        `*first tenth / last tenth* are means over the first and last tenth of the batches (or calls), to show whether fade slows ` +
        `down as it goes. The parts of one audit event are then timed inside Postgres on the first agent, whose chain holds its ` +
        `share of the events, in a DO block rolled back afterwards.`,
      `*Relay:* ${relay?.jobs.toLocaleString('en-US') ?? 'no'} outbox rows (extract, embed and harvest jobs in turn, valid payloads) ` +
        `relayed by \`relayOutbox\` until none is pending; then the same jobs (same ids and payloads) added by \`queue.add\` one ` +
        `after another, and by \`addBulk\`; each method on a queue prefix of its own on the machine's Redis (${options.redis}), ` +
        `checked to hold every job, then obliterated; after a warm-up of 300 adds.`,
      `Everything runs on the embedded database (PGlite: Postgres in WebAssembly, single-threaded, in memory, in the ` +
        `benchmark's process), one statement at a time; a server Postgres would be faster per statement, and its round trip ` +
        `would be a network one instead.`,
    ],
    tables,
    findings,
  };
}
