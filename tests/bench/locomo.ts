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
 * Options: `--data=<path of locomo-dev.json>`, `--dates` (prefix each turn
 * with its session's date).
 */
import fs from 'node:fs';
import { migrate, openEmbeddedDatabase, type Scope } from '@roster/db';
import { createHashingEmbedder, createMemory, type SearchOptions } from '@roster/memory';
import { testInstallationKey } from '@roster/config/testing';
import { createScopes } from './bulk-load.js';
import { formatMs, formatRatio, mean, percentile, progress, type BenchmarkReport, type ResultTable } from './report.js';

export const title = 'LoCoMo: retrieval recall of evidence turns';

const defaultDataPath = '/work/shared/data/locomo/locomo-dev.json';
const modes = ['full-text', 'vector', 'hybrid'] as const;
type Mode = (typeof modes)[number];
const ks = [5, 10, 20] as const;
const limit = 20;
const categoryNames: Record<number, string> = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop', 5: 'adversarial' };

interface Turn {
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

interface Conversation {
  sample_id: string;
  conversation: Record<string, unknown>;
  qa: Question[];
}

interface Options {
  dataPath: string;
  dates: boolean;
}

/**
 * Search settings measured: search's defaults, and the one knob tried
 * (no MMR, so each mode's own ranking is kept). Nothing else was tuned.
 */
const variants = [
  { name: 'default', options: {} },
  { name: 'no MMR (diversity 1)', options: { diversity: 1 } },
  { name: 'equal vote for the vector arm (weight 1)', options: { weights: { vector: 1 } } },
] as const satisfies ReadonlyArray<{ name: string; options: SearchOptions }>;
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
function sessionsOf(conversation: Record<string, unknown>): Array<{ date: string; turns: Turn[] }> {
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

function turnText(turn: Turn, date: string | null): string {
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
}

export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  const options = parseOptions(args);
  const conversations = JSON.parse(fs.readFileSync(options.dataPath, 'utf8')) as Conversation[];
  const embedder = createHashingEmbedder();
  const database = await openEmbeddedDatabase('memory://');
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
    const latencies: Record<Mode, number[]> = { 'full-text': [], vector: [], hybrid: [] };
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
          turnIds.add(turn.dia_id);
          turnsIndexed += 1;
          if (created) factsCreated += 1;
        }
      }
      largestScope = Math.max(largestScope, turnsOfFact.size);
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
          for (const mode of modes) {
            const searchOptions: SearchOptions = { ...variant.options, mode, limit, tokenBudget: 100_000 };
            const before = performance.now();
            const found = await memory.search(scope, question.question, searchOptions);
            if (variant.name === 'default') latencies[mode].push(performance.now() - before);
            const ranked = found.map((result) => turnsOfFact.get(result.fact.id) ?? []);
            const within = (k: number) => new Set(ranked.slice(0, k).flat());
            const recall = {} as Found['recall'];
            for (const k of ks) {
              const top = within(k);
              recall[k] = evidence.filter((id) => top.has(id)).length / evidence.length;
            }
            results[variant.name][mode] = { recall, hit10: evidence.some((id) => within(10).has(id)) };
          }
        }
        scored.push({ category: question.category, conversation: index, results });
      }
    }
    const seconds = (performance.now() - started) / 1000;
    progress(`locomo: ${scored.length} questions scored in ${seconds.toFixed(0)} s`);
    return buildReport(scored, latencies, {
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

function buildReport(scored: Scored[], latencies: Record<Mode, number[]>, counts: Counts): BenchmarkReport {
  const groups: Array<{ label: string; items: Scored[] }> = [
    ...[1, 2, 3, 4].map((category) => ({
      label: `${category} ${categoryNames[category]}`,
      items: scored.filter((item) => item.category === category),
    })),
    { label: '**1–4 overall**', items: scored.filter((item) => item.category >= 1 && item.category <= 4) },
    { label: '5 adversarial (apart)', items: scored.filter((item) => item.category === 5) },
    { label: '1–4, conversations 1–3 (vector weight chosen here)', items: scored.filter((item) => item.category >= 1 && item.category <= 4 && item.conversation < 3) },
    { label: '1–4, conversations 4–7 (held out)', items: scored.filter((item) => item.category >= 1 && item.category <= 4 && item.conversation >= 3) },
  ];
  const average = (items: Scored[], metric: Metric, mode: Mode, variant: Variant = 'default') =>
    mean(items.map((item) => metric.value(item.results[variant][mode])));

  const recall: ResultTable = {
    title: `Recall of evidence turns by category (top ${limit} of memory.search in the question's conversation)`,
    columns: ['category', 'questions', ...modes.flatMap((mode) => metrics.map((metric) => `${mode} ${metric.name}`))],
    rows: groups.map((group) => [
      group.label,
      String(group.items.length),
      ...modes.flatMap((mode) => metrics.map((metric) => formatRatio(average(group.items, metric, mode)))),
    ]),
  };
  const knob: ResultTable = {
    title: 'Knobs, categories 1–4: search defaults (hashing vector arm weighted 0.25) against MMR off and an equal vote (R@10 / R@20)',
    columns: ['search options', ...modes],
    rows: variants.map((variant) => [
      variant.name,
      ...modes.map(
        (mode) =>
          `${formatRatio(average(groups[4]!.items, metrics[1]!, mode, variant.name))} / ${formatRatio(average(groups[4]!.items, metrics[2]!, mode, variant.name))}`,
      ),
    ]),
  };
  const latency: ResultTable = {
    title: 'Latency of one search, ms (all questions, categories 1–5)',
    columns: ['mode', 'p50', 'p95'],
    rows: modes.map((mode) => [mode, formatMs(percentile(latencies[mode], 50)), formatMs(percentile(latencies[mode], 95))]),
  };

  const overall = groups[4]!.items;
  const ranking = modes
    .map((mode) => ({ mode, r10: average(overall, metrics[1]!, mode), r20: average(overall, metrics[2]!, mode) }))
    .sort((a, b) => b.r10 - a.r10);
  const [first, second, third] = ranking as [(typeof ranking)[number], (typeof ranking)[number], (typeof ranking)[number]];
  const hybrid = ranking.find((entry) => entry.mode === 'hybrid')!;
  const arms = ranking.filter((entry) => entry.mode !== 'hybrid');
  const hybridBeatsBoth = arms.every((arm) => hybrid.r10 > arm.r10);
  const perCategory = [1, 2, 3, 4].map((category) => {
    const items = groups[category - 1]!.items;
    const best = [...modes].sort((a, b) => average(items, metrics[1]!, b) - average(items, metrics[1]!, a))[0]!;
    return `${categoryNames[category]}: ${best}`;
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
        `and counts as every turn it stands for). Vectors: the hashing embedder (\`hashing-256\`), no model. Each question is searched ` +
        `in its own conversation with \`memory.search(scope, question, { mode, limit: 20, tokenBudget: 100000 })\` and ` +
        `otherwise default options: full-text matches any word of the question (OR), ranked by \`ts_rank_cd\`; the vector arm ` +
        `scans the scope exactly (at most ${counts.largestScope} vectors per conversation, under search's \`exactBelow\` default); hybrid fuses the two by reciprocal rank, the hashing vector arm voting 0.25 against full text's 1 (chosen among 0.25, 0.5, 0.75 and 1 on conversations 1–3; conversations 4–7 are held out); all three modes then ` +
        `pass through the same trust and recency weights and MMR (diversity 0.75).`,
      `Scoring follows the dataset's README: evidence ids split on \`;\` and spaces, kept when they read \`D<session>:<turn>\` ` +
        `(${counts.droppedIds} malformed dropped, ${counts.unknownIds} naming no turn of the conversation dropped), questions left ` +
        `without evidence not scored (${counts.droppedQuestions}). R@k = evidence turns in the top k ÷ evidence turns; ` +
        `hit@10 = at least one in the top 10. Categories 1–4 are the usual scoring set; 5 (adversarial) is shown apart.`,
    ],
    tables: [recall, knob, latency],
    findings: [
      `**Which mode wins (categories 1–4, R@10):** ${first.mode} ${formatRatio(first.r10)}, ${second.mode} ${formatRatio(second.r10)}, ` +
        `${third.mode} ${formatRatio(third.r10)}. Hybrid ${hybridBeatsBoth ? 'beats both arms' : 'does not beat both arms'} at R@10 ` +
        `(R@20: ${ranking.map((entry) => `${entry.mode} ${formatRatio(entry.r20)}`).join(', ')}). ` +
        `Best mode at R@10 by category: ${perCategory.join('; ')}.`,
    ],
  };
}
