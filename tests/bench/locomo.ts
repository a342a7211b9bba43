/**
 * Retrieval recall of evidence on LoCoMo (Maharana et al., ACL 2024; CC BY-NC
 * 4.0), the development subset in /work/shared/data/locomo. The data is read
 * from there and never copied into the repository.
 *
 * Each conversation's turns are remembered, through `memory.remember`, as the
 * facts of one scope (one agent per conversation, one reader); each question
 * is searched in its own conversation's scope with the full-text arm alone,
 * the vector arm alone, and hybrid, and scored by the evidence turns found.
 *
 * Beside it, in the same run, a peer that is not Roster: SQLite's FTS5 (through
 * better-sqlite3) with the porter tokenizer and BM25 ranking, over the same
 * turns and the same questions, each question's words joined by OR.
 *
 * Options: `--data=<path of locomo-dev.json>`, `--dates` (prefix each turn
 * with its session's date).
 */
import fs from 'node:fs';
import { migrate, openEmbeddedDatabase, type Scope } from '@roster/db';
import { createHashingEmbedder, createMemory, hashingVectorWeight, type SearchOptions } from '@roster/memory';
import { testInstallationKey } from '@roster/config/testing';
import { createScopes } from './bulk-load.js';
import { createPeer, sqliteVersion } from './locomo-peer.js';
import { formatMs, formatRatio, mean, percentile, progress, type BenchmarkReport, type ResultTable } from './report.js';

export const title = 'LoCoMo: retrieval recall of evidence turns';

const defaultDataPath = '/work/shared/data/locomo/locomo-dev.json';
const modes = ['full-text', 'vector', 'hybrid'] as const;
type Mode = (typeof modes)[number];
/** The peer's column in the tables. */
const peer = 'FTS5 BM25' as const;
const ks = [5, 10, 20] as const;
const limit = 20;
/** The variant whose latency is shown beside the default's. */
const formerDefault = '80 candidates per arm (4 × limit, the default before)';
const categoryNames: Record<number, string> = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop', 5: 'adversarial' };

export interface Turn {
  speaker: string;
  dia_id: string;
  text: string;
  blip_caption?: string;
}

interface Question {
  question: string;
  evidence: string[];
  category: number;
}

export interface Conversation {
  sample_id: string;
  conversation: Record<string, unknown>;
  qa: Question[];
}

interface Options {
  dataPath: string;
  dates: boolean;
}

/**
 * Search settings measured: search's defaults, and the knobs tried against
 * them, each in the modes it changes. Nothing else was tuned.
 */
const variants = [
  { name: 'default', options: {}, modes },
  { name: 'no MMR (diversity 1)', options: { diversity: 1 }, modes },
  { name: 'no neighbours (0)', options: { neighbours: 0 }, modes: ['full-text', 'hybrid'] },
  { name: `vector arm weighted 0.25 (the weight before BM25)`, options: { weights: { vector: 0.25 } }, modes: ['hybrid'] },
  { name: 'equal vote for the vector arm (weight 1)', options: { weights: { vector: 1 } }, modes: ['hybrid'] },
  { name: '80 candidates per arm (4 × limit, the default before)', options: { candidates: 80 }, modes: ['full-text', 'vector', 'hybrid'] },
] as const satisfies ReadonlyArray<{ name: string; options: SearchOptions; modes: readonly Mode[] }>;
type Variant = (typeof variants)[number]['name'];

function parseOptions(args: readonly string[]): Options {
  const options: Options = { dataPath: defaultDataPath, dates: false };
  for (const arg of args) {
    const [key, value = ''] = arg.replace(/^--/, '').split('=');
    if (key === 'data') options.dataPath = value;
    else if (key === 'dates') options.dates = true;
    else throw new Error(`Unknown option ${arg}: locomo takes --data=<path> and --dates.`);
  }
  return options;
}

/** The sessions of a conversation in order, each with its date and turns. */
export function sessionsOf(conversation: Record<string, unknown>): Array<{ date: string; turns: Turn[] }> {
  return Object.keys(conversation)
    .map((key) => /^session_(\d+)$/.exec(key))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => Number(match[1]))
    .sort((a, b) => a - b)
    .map((number) => ({
      date: String(conversation[`session_${number}_date_time`] ?? ''),
      turns: conversation[`session_${number}`] as Turn[],
    }));
}

export function turnText(turn: Turn, date: string | null): string {
  const shared = turn.blip_caption === undefined ? '' : ` [shares ${turn.blip_caption}]`;
  return `${date === null ? '' : `${date}: `}${turn.speaker}: ${turn.text}${shared}`;
}

/**
 * Evidence ids as the README says: split on `;`, `,` and spaces, keep
 * `D<session>:<turn>` (leading zeros dropped, so `D30:05` is `D30:5`).
 */
export function cleanEvidence(evidence: readonly string[]): string[] {
  const ids = evidence
    .flatMap((entry) => String(entry).split(/[;,\s]+/))
    .map((entry) => /^D(\d+):(\d+)$/.exec(entry.trim()))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => `D${Number(match[1])}:${Number(match[2])}`);
  return [...new Set(ids)];
}

interface Found {
  recall: Record<(typeof ks)[number], number>;
  /** Whether any evidence turn was in the top 10. */
  hit10: boolean;
}

interface Scored {
  category: number;
  /** The conversation's place in the file: the vector weight was chosen on the first three. */
  conversation: number;
  results: Record<Variant, Record<Mode, Found>>;
  /** The SQLite FTS5 peer's top 20. */
  peer: Found;
}

function score(ranked: ReadonlyArray<readonly string[]>, evidence: readonly string[]): Found {
  const within = (k: number) => new Set(ranked.slice(0, k).flat());
  const recall = {} as Found['recall'];
  for (const k of ks) {
    const top = within(k);
    recall[k] = evidence.filter((id) => top.has(id)).length / evidence.length;
  }
  return { recall, hit10: evidence.some((id) => within(10).has(id)) };
}

export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  const options = parseOptions(args);
  const conversations = JSON.parse(fs.readFileSync(options.dataPath, 'utf8')) as Conversation[];
  const embedder = createHashingEmbedder();
  const database = await openEmbeddedDatabase('memory://');
  const sqlite = createPeer(limit);
  try {
    await migrate(database);
    const memory = createMemory({ database, embedder , key: testInstallationKey });
    await memory.prepare();
    const scopes = await createScopes(database, conversations.length, 'locomo');

    let turnsIndexed = 0;
    let factsCreated = 0;
    let droppedIds = 0;
    let unknownIds = 0;
    let droppedQuestions = 0;
    let largestScope = 0;
    const scored: Scored[] = [];
    const latencies: Record<Mode | typeof peer, number[]> = { 'full-text': [], vector: [], hybrid: [], [peer]: [] };
    const formerLatencies: Record<Mode, number[]> = { 'full-text': [], vector: [], hybrid: [] };
    const started = performance.now();

    for (const [index, conversation] of conversations.entries()) {
      const scope: Scope = scopes[index]!;
      // A fact may stand for several turns: remembering the same text again returns the same fact.
      const turnsOfFact = new Map<string, string[]>();
      const turnIds = new Set<string>();
      for (const session of sessionsOf(conversation.conversation)) {
        for (const turn of session.turns) {
          const { fact, created } = await memory.remember(scope, {
            content: turnText(turn, options.dates ? session.date : null),
            provenance: { actor: { kind: 'person', id: turn.speaker } },
          });
          turnsOfFact.set(fact.id, [...(turnsOfFact.get(fact.id) ?? []), turn.dia_id]);
          sqlite.add(index, turn.dia_id, turnText(turn, options.dates ? session.date : null));
          turnIds.add(turn.dia_id);
          turnsIndexed += 1;
          if (created) factsCreated += 1;
        }
      }
      largestScope = Math.max(largestScope, turnsOfFact.size);
      // What the vacuum job does within the hour on the embedded database (a server's autovacuum sooner): the planner's
      // statistics for the rows just written. Without them it read each found fact's vector through the scope's index
      // (every vector of the scope, once per fact), about 8 ms of a search here.
      await database.ownerSession('bench: analyze after loading a conversation, as the vacuum job does', (session) => session.query('analyze'));
      progress(`locomo ${conversation.sample_id}: ${turnIds.size} turns remembered; ${conversation.qa.length} questions`);

      for (const question of conversation.qa) {
        const cleaned = cleanEvidence(question.evidence);
        droppedIds += question.evidence.length - cleaned.length;
        // An id that names no turn of the conversation cannot be found by anyone.
        const evidence = cleaned.filter((id) => turnIds.has(id));
        unknownIds += cleaned.length - evidence.length;
        if (evidence.length === 0) {
          droppedQuestions += 1;
          continue;
        }
        const results = {} as Scored['results'];
        for (const variant of variants) {
          results[variant.name] = {} as Record<Mode, Found>;
          for (const mode of variant.modes) {
            // Ranked without the relevance floor, as the peer is: the floor's cost on these questions is the never-said bench's.
            const searchOptions: SearchOptions = { ...variant.options, mode, limit, tokenBudget: 100_000, includeIrrelevant: true };
            const before = performance.now();
            const found = await memory.search(scope, question.question, searchOptions);
            if (variant.name === 'default') latencies[mode].push(performance.now() - before);
            if (variant.name === formerDefault) formerLatencies[mode].push(performance.now() - before);
            results[variant.name][mode] = score(found.map((result) => turnsOfFact.get(result.fact.id) ?? []), evidence);
          }
        }
        const before = performance.now();
        const peerFound = sqlite.search(index, question.question);
        latencies[peer].push(performance.now() - before);
        scored.push({ category: question.category, conversation: index, results, peer: score(peerFound.map((id) => [id]), evidence) });
      }
    }
    const seconds = (performance.now() - started) / 1000;
    progress(`locomo: ${scored.length} questions scored in ${seconds.toFixed(0)} s`);
    return buildReport(scored, latencies, formerLatencies, {
      conversations: conversations.length,
      turnsIndexed,
      factsCreated,
      droppedIds,
      unknownIds,
      droppedQuestions,
      largestScope,
      options,
    });
  } finally {
    sqlite.close();
    await database.close();
  }
}

interface Counts {
  conversations: number;
  turnsIndexed: number;
  factsCreated: number;
  droppedIds: number;
  unknownIds: number;
  droppedQuestions: number;
  /** The most facts one conversation's scope holds. */
  largestScope: number;
  options: Options;
}

interface Metric {
  name: string;
  value: (found: Found) => number;
}

const metrics: Metric[] = [
  ...ks.map((k) => ({ name: `R@${k}`, value: (found: Found) => found.recall[k] })),
  { name: 'hit@10', value: (found: Found) => (found.hit10 ? 1 : 0) },
];

function buildReport(scored: Scored[], latencies: Record<Mode | typeof peer, number[]>, formerLatencies: Record<Mode, number[]>, counts: Counts): BenchmarkReport {
  const scoring = (item: Scored) => item.category >= 1 && item.category <= 4;
  const groups: Array<{ label: string; items: Scored[] }> = [
    ...[1, 2, 3, 4].map((category) => ({
      label: `${category} ${categoryNames[category]}`,
      items: scored.filter((item) => item.category === category),
    })),
    { label: '**1–4 overall**', items: scored.filter(scoring) },
    { label: '5 adversarial (apart)', items: scored.filter((item) => item.category === 5) },
    { label: '1–4, conversations 1–3 (weights chosen here)', items: scored.filter((item) => scoring(item) && item.conversation < 3) },
    { label: '1–4, conversations 4–7 (held out)', items: scored.filter((item) => scoring(item) && item.conversation >= 3) },
  ];
  const average = (items: Scored[], metric: Metric, mode: Mode, variant: Variant = 'default') =>
    mean(items.map((item) => metric.value(item.results[variant][mode])));
  const averagePeer = (items: Scored[], metric: Metric) => mean(items.map((item) => metric.value(item.peer)));
  const r10 = metrics[1]!;
  const r20 = metrics[2]!;
  const overall = groups[4]!.items;
  const heldOut = groups[7]!.items;

  const recall: ResultTable = {
    title: `Recall of evidence turns by category (top ${limit} of memory.search in the question's conversation, and of the FTS5 peer)`,
    columns: ['category', 'questions', ...[...modes, peer].flatMap((mode) => metrics.map((metric) => `${mode} ${metric.name}`))],
    rows: groups.map((group) => [
      group.label,
      String(group.items.length),
      ...modes.flatMap((mode) => metrics.map((metric) => formatRatio(average(group.items, metric, mode)))),
      ...metrics.map((metric) => formatRatio(averagePeer(group.items, metric))),
    ]),
  };
  const knob: ResultTable = {
    title: 'Knobs, categories 1–4: search defaults against one change each (R@10 / R@20; held-out conversations 4–7 in brackets)',
    columns: ['search options', ...modes],
    rows: variants.map((variant) => [
      variant.name,
      ...modes.map((mode) =>
        (variant.modes as readonly Mode[]).includes(mode)
          ? `${formatRatio(average(overall, r10, mode, variant.name))} / ${formatRatio(average(overall, r20, mode, variant.name))} (${formatRatio(average(heldOut, r10, mode, variant.name))})`
          : '–',
      ),
    ]),
  };
  const latency: ResultTable = {
    title: 'Latency of one search, ms (all questions, categories 1–5, one at a time)',
    columns: ['mode', 'p50', 'p95', 'p50 ÷ FTS5 p50'],
    rows: [
      ...([...modes, peer] as const).map((mode) => [
        mode,
        formatMs(percentile(latencies[mode], 50)),
        formatMs(percentile(latencies[mode], 95)),
        `${(percentile(latencies[mode], 50) / percentile(latencies[peer], 50)).toFixed(1)}×`,
      ]),
      ...modes.map((mode) => [
        `${mode}, 80 candidates per arm (before)`,
        formatMs(percentile(formerLatencies[mode], 50)),
        formatMs(percentile(formerLatencies[mode], 95)),
        `${(percentile(formerLatencies[mode], 50) / percentile(latencies[peer], 50)).toFixed(1)}×`,
      ]),
    ],
  };

  const ranking = [...modes.map((mode) => ({ mode: mode as string, r10: average(overall, r10, mode), r20: average(overall, r20, mode) })), { mode: peer as string, r10: averagePeer(overall, r10), r20: averagePeer(overall, r20) }].sort(
    (a, b) => b.r10 - a.r10,
  );
  const hybrid = average(overall, r10, 'hybrid');
  const hybridHeld = average(heldOut, r10, 'hybrid');
  const peerR10 = averagePeer(overall, r10);
  const peerHeld = averagePeer(heldOut, r10);
  const ratio = percentile(latencies.hybrid, 50) / percentile(latencies[peer], 50);
  const perCategory = [1, 2, 3, 4].map((category) => {
    const items = groups[category - 1]!.items;
    const best = [...modes].sort((a, b) => average(items, r10, b) - average(items, r10, a))[0]!;
    return `${categoryNames[category]}: ${best} ${formatRatio(average(items, r10, best))} (FTS5 ${formatRatio(averagePeer(items, r10))})`;
  });

  return {
    notes: [
      `Data: LoCoMo, "Evaluating Very Long-Term Conversational Memory of LLM Agents" (Maharana et al., ACL 2024), ` +
        `[snap-research/LoCoMo](https://github.com/snap-research/LoCoMo) \`data/locomo10.json\` at commit 3eb6f2c, licensed ` +
        `[CC BY-NC 4.0](https://creativecommons.org/licenses/by-nc/4.0/); ${counts.conversations} of its 10 conversations ` +
        `(the development subset kept outside this repository; it is read at run time, not copied here).`,
      `Each turn is remembered with \`memory.remember\` as a fact of its conversation's own scope (one agent per ` +
        `conversation), text \`speaker: text\` plus \`[shares <image caption>]\`${counts.options.dates ? ', prefixed with the session date' : ', without the session date'}; ` +
        `${counts.turnsIndexed} turns became ${counts.factsCreated} facts (a turn repeating an earlier one word for word is the same fact, ` +
        `and counts as every turn it stands for); then the database is analyzed as its owner, as the embedded database's hourly vacuum job does. Vectors: the hashing embedder (\`hashing-256\`), no model. Each question is searched ` +
        `in its own conversation with \`memory.search(scope, question, { mode, limit: 20, tokenBudget: 100000, includeIrrelevant: true })\` (ranking only: the relevance floor is left out, as the peer has none; what it costs on these questions is in "Never said" below) and ` +
        `otherwise default options: full-text matches any word of the question (OR) and ranks by BM25 (k1 1.2, b 0.75, idf over the ` +
        `facts of the scope), then lends half of each of its top matches' score to the facts recorded just before and after it, and a ` +
        `quarter (the share squared) to the next one on each side (\`neighbours\`, the share chosen among 0.1, 0.2, 0.3, 0.5, 0.7 and 1 on conversations 1–3); the vector arm ` +
        `scans the scope exactly (at most ${counts.largestScope} vectors per conversation, under search's \`exactBelow\` default); ` +
        `hybrid fuses the two by reciprocal rank, the hashing vector arm voting ${hashingVectorWeight} against full text's 1 ` +
        `(chosen among 0.1, 0.25, 0.5, 0.75 and 1 on conversations 1–3); conversations 4–7 are held out. All three modes then ` +
        `pass through the same trust and recency weights and MMR (diversity 0.75).`,
      `The peer, in the same run over the same turns and questions: SQLite ${sqliteVersion()} FTS5 through better-sqlite3, one ` +
        `in-memory table with a row per turn (the same text), \`tokenize = 'porter'\`, the question's words (split as ` +
        `memory.search splits them) each quoted and joined by OR, \`where turns match ? and conversation = ? order by rank limit 20\` ` +
        `(rank is FTS5's bm25()). It has no scopes, no trust, no audit and no vectors: it is the floor a plain index gives.`,
      `Scoring follows the dataset's README: evidence ids split on \`;\` and spaces, kept when they read \`D<session>:<turn>\` ` +
        `(${counts.droppedIds} malformed dropped, ${counts.unknownIds} naming no turn of the conversation dropped), questions left ` +
        `without evidence not scored (${counts.droppedQuestions}). R@k = evidence turns in the top k ÷ evidence turns; ` +
        `hit@10 = at least one in the top 10. Categories 1–4 are the usual scoring set; 5 (adversarial) is shown apart.`,
    ],
    tables: [recall, knob, latency],
    findings: [
      `**Goal (a moonshot), hybrid R@10 ≥ 0.72 on categories 1–4, with no tuning on the answers:** ${formatRatio(hybrid)} (**${hybrid >= 0.72 ? 'met' : 'missed'}**); ` +
        `held-out conversations 4–7 alone ${formatRatio(hybridHeld)}. The FTS5 peer: ${formatRatio(peerR10)} (held out ${formatRatio(peerHeld)}). ` +
        `Ranking at R@10: ${ranking.map((entry) => `${entry.mode} ${formatRatio(entry.r10)}`).join(', ')} ` +
        `(R@20: ${ranking.map((entry) => `${entry.mode} ${formatRatio(entry.r20)}`).join(', ')}). ` +
        `Best mode at R@10 by category: ${perCategory.join('; ')}.`,
      `**Goal, hybrid search p50 within 5× of FTS5's:** ${formatMs(percentile(latencies.hybrid, 50))} ms against ` +
        `${formatMs(percentile(latencies[peer], 50))} ms, ${ratio.toFixed(1)}× (**${ratio <= 5 ? 'met' : 'missed'}**). ` +
        `A memory search is a transaction as the application role with the scope's settings (row-level security), two arms, ` +
        `the facts' rows and vectors read back, and MMR; the peer is one statement on an in-process index.`,
    ],
  };
}
