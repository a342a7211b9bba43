/**
 * When does a fact match a request to forget, correct or update it? Measured
 * on the hand-written pairs of match-pairs.ts through `memory.match` over a
 * real (embedded) database with the hashing embedder: every request is scored
 * against every fact of the person, the thresholds set to zero so that each
 * pair's shared-word share and cosine similarity come back; the rules are
 * then applied to those scores.
 *
 * The 40 facts are split in two: rules and the tie margin are chosen on the
 * requests about even-numbered facts and reported on the odd-numbered ones.
 * Both halves are scored against all 40 facts.
 */
import { migrate, openEmbeddedDatabase } from '@roster/db';
import { closeMatches, createHashingEmbedder, createMemory, hashingMatchRule, matchTieMargin, type FactMatch } from '@roster/memory';
import { testInstallationKey } from '@roster/config/testing';
import { createScopes } from './bulk-load.js';
import { matchItems } from './match-pairs.js';
import { formatRatio, progress, type BenchmarkReport, type ResultTable } from './report.js';

export const title = 'Match: which facts a forget, correct or update request may act on';

const kinds = ['forget', 'correct', 'update'] as const;
type Kind = (typeof kinds)[number];

interface Request {
  item: number;
  kind: Kind;
  text: string;
  /** Scores against every fact, by fact index. */
  scores: Array<{ wordShare: number; shared: number; similarity: number }>;
}

interface Rule {
  name: string;
  matches(score: Request['scores'][number]): boolean;
}

const wordSteps = [0.25, 0.34, 0.5, 0.67, 1];
const similaritySteps = [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7];
/** The most often an unrelated request may find a fact to act on, on the tuning half. */
const allowedUnrelated = 0.05;
const marginSteps = [0, 0.05, 0.1, 0.15, 0.2];

function words(w: number): Rule {
  return { name: `words ≥ ${w}`, matches: (score) => score.shared > 0 && score.wordShare >= w };
}
function similar(s: number): Rule {
  return { name: `similarity ≥ ${s}`, matches: (score) => score.similarity >= s };
}
function either(w: number, s: number): Rule {
  return { name: `words ≥ ${w} or similarity ≥ ${s}`, matches: (score) => words(w).matches(score) || similar(s).matches(score) };
}

function both(w: number, s: number): Rule {
  return { name: `words ≥ ${w} and similarity ≥ ${s}`, matches: (score) => words(w).matches(score) && similar(s).matches(score) };
}
function mean(m: number): Rule {
  return { name: `mean of words and similarity ≥ ${m}`, matches: (score) => (score.wordShare + score.similarity) / 2 >= m };
}
function bothOrSimilar(w: number, s: number, alone: number): Rule {
  return {
    name: `(words ≥ ${w} and similarity ≥ ${s}) or similarity ≥ ${alone}`,
    matches: (score) => both(w, s).matches(score) || similar(alone).matches(score),
  };
}

const rules: Rule[] = [
  ...wordSteps.map(words),
  ...similaritySteps.map(similar),
  ...[0.5, 0.67, 1].flatMap((w) => [0.4, 0.45, 0.5, 0.55, 0.6].map((s) => either(w, s))),
  ...[0.34, 0.5, 0.67].flatMap((w) => [0.2, 0.25, 0.3, 0.35, 0.4].map((s) => both(w, s))),
  ...[0.4, 0.45, 0.5, 0.55, 0.6, 0.65].map(mean),
  ...[0.6, 0.65].flatMap((alone) => [0.25, 0.3, 0.35].map((s) => bothOrSimilar(0.5, s, alone))),
];

interface RuleResult {
  precision: number;
  recall: number;
  /** Requests whose own fact is absent that would still find one to act on. */
  unrelated: number;
  /** Recall by kind of request. */
  byKind: Record<Kind, number>;
}

function evaluate(rule: Rule, requests: readonly Request[]): RuleResult {
  let truePositives = 0;
  let falsePositives = 0;
  let positives = 0;
  let unrelated = 0;
  const found: Record<Kind, [number, number]> = { forget: [0, 0], correct: [0, 0], update: [0, 0] };
  for (const request of requests) {
    let other = false;
    request.scores.forEach((score, index) => {
      const hit = rule.matches(score);
      if (index === request.item) {
        positives += 1;
        found[request.kind][1] += 1;
        if (hit) {
          truePositives += 1;
          found[request.kind][0] += 1;
        }
      } else if (hit) {
        falsePositives += 1;
        other = true;
      }
    });
    if (other) unrelated += 1;
  }
  const ratio = ([a, b]: [number, number]) => (b === 0 ? 0 : a / b);
  return {
    precision: truePositives + falsePositives === 0 ? 1 : truePositives / (truePositives + falsePositives),
    recall: truePositives / positives,
    unrelated: unrelated / requests.length,
    byKind: { forget: ratio(found.forget), correct: ratio(found.correct), update: ratio(found.update) },
  };
}

/** What a destructive action does with the product's rule and a tie margin: act on one fact, ask which, or find nothing. */
function outcomes(requests: readonly Request[], margin: number, withOwnFact: boolean) {
  const counts = { right: 0, wrong: 0, asks: 0, nothing: 0 };
  for (const request of requests) {
    const matches = request.scores
      .map((score, index) => ({ index, score }))
      .filter(({ index }) => withOwnFact || index !== request.item)
      .filter(({ score }) => productRule.matches(score))
      .map(({ index, score }) => ({ index, score: (score.wordShare + score.similarity) / 2 }))
      .sort((a, b) => b.score - a.score);
    const best = matches[0];
    if (best === undefined) counts.nothing += 1;
    else if (matches.filter((match) => match.score >= best.score - margin).length > 1) counts.asks += 1;
    else if (best.index === request.item) counts.right += 1;
    else counts.wrong += 1;
  }
  return counts;
}

const productRule = mean(hashingMatchRule.minScore);

export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  if (args.length > 0) throw new Error(`match takes no options, got ${args.join(' ')}.`);
  const database = await openEmbeddedDatabase('memory://');
  try {
    await migrate(database);
    const memory = createMemory({ database, embedder: createHashingEmbedder() , key: testInstallationKey });
    await memory.prepare();
    const [scope] = await createScopes(database, 1, 'match');
    const factIds: string[] = [];
    for (const item of matchItems) {
      const { fact } = await memory.remember(scope!, { content: item.fact, provenance: { actor: { kind: 'person', id: scope!.personId! } } });
      factIds.push(fact.id);
    }
    progress(`match: ${factIds.length} facts remembered; scoring every request against every fact`);
    const requests: Request[] = [];
    for (const [item, entry] of matchItems.entries()) {
      for (const kind of kinds) {
        const text = entry[kind];
        if (text === null) continue;
        const all: FactMatch[] = await memory.match(scope!, text, { factIds, rule: { minScore: -1, minWordShare: 0 } });
        const byId = new Map(all.map((match) => [match.fact.id, match]));
        const scores = factIds.map((id) => {
          const match = byId.get(id);
          if (match === undefined) throw new Error(`memory.match left out fact ${id} for ${JSON.stringify(text)} with zero thresholds.`);
          return { wordShare: match.wordShare, shared: match.sharedWords.length, similarity: match.similarity ?? 0 };
        });
        requests.push({ item, kind, text, scores });
      }
    }
    // The product's own ordering and tie rule, checked against the replica above on one request.
    const probe = await memory.match(scope!, matchItems[0]!.forget);
    progress(`match: "${matchItems[0]!.forget}" matches ${probe.length} fact(s), ${closeMatches(probe).length} close`);

    const tuning = requests.filter((request) => request.item % 2 === 0);
    const heldOut = requests.filter((request) => request.item % 2 === 1);
    const results = rules.map((rule) => ({ rule, tuning: evaluate(rule, tuning), heldOut: evaluate(rule, heldOut) }));
    const admissible = results.filter((result) => result.tuning.unrelated <= allowedUnrelated);
    const best = [...admissible].sort((a, b) => b.tuning.recall - a.tuning.recall || b.tuning.precision - a.tuning.precision)[0];

    const ruleTable: ResultTable = {
      title: `Rules on pairs: tuning half (requests about facts 0, 2, 4, …; ${tuning.length} requests × 40 facts) / held-out half (${heldOut.length} requests)`,
      columns: ['rule', 'precision', 'recall', 'unrelated request finds a fact', 'recall forget / correct / update (held out)', 'held-out precision', 'held-out recall', 'held-out unrelated'],
      rows: results.map(({ rule, tuning: t, heldOut: h }) => [
        rule.name === productRule.name ? `**${rule.name}** (chosen)` : rule.name,
        formatRatio(t.precision),
        formatRatio(t.recall),
        formatRatio(t.unrelated),
        kinds.map((kind) => formatRatio(h.byKind[kind], 2)).join(' / '),
        formatRatio(h.precision),
        formatRatio(h.recall),
        formatRatio(h.unrelated),
      ]),
    };

    const marginTable: ResultTable = {
      title: `What an action does with the chosen rule (${productRule.name}), by tie margin: requests whose own fact is stored / is not (tuning half, ${tuning.length} requests; held-out half, ${heldOut.length})`,
      columns: ['half', 'tie margin', 'own fact stored: acts on it', 'asks which', 'acts on another', 'finds nothing', 'own fact not stored: acts on an unrelated fact', 'asks which', 'finds nothing'],
      rows: (['tuning', 'held out'] as const).flatMap((half) =>
        marginSteps.map((margin) => {
          const part = half === 'tuning' ? tuning : heldOut;
          const stored = outcomes(part, margin, true);
          const absent = outcomes(part, margin, false);
          return [
            half,
            margin === matchTieMargin ? `**${margin}** (chosen)` : String(margin),
            String(stored.right),
            String(stored.asks),
            String(stored.wrong),
            String(stored.nothing),
            String(absent.wrong + absent.right),
            String(absent.asks),
            String(absent.nothing),
          ];
        }),
      ),
    };

    const missed = heldOut
      .filter((request) => !productRule.matches(request.scores[request.item]!))
      .map((request) => {
        const score = request.scores[request.item]!;
        return `${request.kind} "${request.text}" → "${matchItems[request.item]!.fact}" (words ${formatRatio(score.wordShare, 2)}, similarity ${formatRatio(score.similarity, 2)})`;
      });
    const falseMatches = requests
      .flatMap((request) =>
        request.scores
          .map((score, index) => ({ score, index }))
          .filter(({ score, index }) => index !== request.item && productRule.matches(score))
          .map(({ score, index }) => `${request.kind} "${request.text}" → "${matchItems[index]!.fact}" (words ${formatRatio(score.wordShare, 2)}, similarity ${formatRatio(score.similarity, 2)})`),
      );

    return {
      notes: [
        `${matchItems.length} hand-written facts about one person (tests/bench/match-pairs.ts), each a different attribute, many sharing words on purpose (where I live / where my sister lives, my dog's / my cat's name), and ${requests.length} requests: how that person would ask to forget each fact, correct it and update it, as the offline engine passes them on (the words after "forget that", "actually," and "update:"). A request and its own fact are a related pair; a request and any other fact an unrelated one. Every fact is remembered through \`memory.remember\` in one scope of an embedded database (hashing embedder, \`hashing-256\`), and every request is scored against every fact by \`memory.match\` with its thresholds set to zero: *words* is the share of the request's content words (Postgres \`english\` full-text lexemes: stemmed, stop words left out) that the fact holds, *similarity* the cosine of the two hashing vectors.`,
        `*precision* and *recall* count pairs; *unrelated request finds a fact* is the share of requests that would find at least one other fact to act on if their own fact were not stored: the failure this guards against. Rules are chosen on the tuning half (requests about facts 0, 2, 4, …): the highest recall among rules whose unrelated rate there is at most ${allowedUnrelated}. The held-out columns are not used to choose.`,
      ],
      tables: [ruleTable, marginTable],
      findings: [
        best === undefined
          ? `**No rule** keeps unrelated requests at or under ${allowedUnrelated} on the tuning half.`
          : `**Best on the tuning half:** ${best.rule.name} (precision ${formatRatio(best.tuning.precision)}, recall ${formatRatio(best.tuning.recall)}, unrelated ${formatRatio(best.tuning.unrelated)}); held out: precision ${formatRatio(best.heldOut.precision)}, recall ${formatRatio(best.heldOut.recall)}, unrelated ${formatRatio(best.heldOut.unrelated)}. The product uses **${productRule.name}** (packages/memory/src/match.ts, \`hashingMatchRule\`) and a tie margin of **${matchTieMargin}**.`,
        `**Held-out requests the chosen rule misses** (${missed.length}; the action then says it found nothing, or a correction is noted as new): ${missed.join('; ') || 'none'}.`,
        `**Unrelated pairs the chosen rule matches, both halves** (${falseMatches.length} of ${requests.length * (matchItems.length - 1)}): ${falseMatches.join('; ') || 'none'}.`,
      ],
    };
  } finally {
    await database.close();
  }
}
