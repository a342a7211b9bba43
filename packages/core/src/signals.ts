/** The kinds of learning signal the core detects, once, for every road. */
export type SignalKind = 'correction' | 'remember' | 'preference' | 'negative-rating';

export interface LearningSignal {
  kind: SignalKind;
  /** The phrase that carried it, as written. */
  phrase: string;
}

/** Phrases per kind, English and Italian. Matched as whole words, case-insensitively. */
const phrases: Record<SignalKind, readonly string[]> = {
  correction: [
    "that's wrong",
    'that is wrong',
    "that's not right",
    'that is not right',
    "that's incorrect",
    'that is incorrect',
    "you're wrong",
    'you are wrong',
    'no',
    'nope',
    'actually',
    'correction',
    'hai sbagliato',
    'sbagliato',
    'è sbagliato',
  ],
  remember: ['remember', 'ricorda', 'ricordati'],
  preference: ['next time', 'from now on', 'la prossima volta', "d'ora in poi", 'da ora in poi'],
  'negative-rating': ['👎', 'bad answer', 'risposta sbagliata'],
};

/** Phrases that count only at the very start of the message ("no, …" is a correction; "I have no idea" is not). */
const leadingOnly = new Set(['no', 'nope', 'actually', 'correction']);

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/'/g, "['’]");
}

const patterns = (Object.entries(phrases) as Array<[SignalKind, readonly string[]]>).flatMap(([kind, list]) =>
  list.map((phrase) => ({
    kind,
    phrase,
    // Whole words: no letter or digit on either side. "ricordando" is not "ricorda".
    pattern: leadingOnly.has(phrase)
      ? new RegExp(`^\\s*${escape(phrase)}(?![\\p{L}\\p{N}])`, 'iu')
      : new RegExp(`(?<![\\p{L}\\p{N}])${escape(phrase)}(?![\\p{L}\\p{N}])`, 'iu'),
  })),
);

/**
 * The learning signals in a person's own words. Callers pass only what the
 * person wrote: never an agent's text, a job's, or quoted untrusted content.
 */
export function detectSignals(text: string, rating?: 'negative' | 'positive'): LearningSignal[] {
  const found: LearningSignal[] = [];
  const seen = new Set<SignalKind>();
  for (const { kind, pattern } of patterns) {
    if (seen.has(kind)) continue;
    const match = pattern.exec(text);
    if (match !== null) {
      seen.add(kind);
      found.push({ kind, phrase: match[0].trim() });
    }
  }
  if (rating === 'negative' && !seen.has('negative-rating')) found.push({ kind: 'negative-rating', phrase: 'rating' });
  return found;
}
