import { RosterError } from '@roster/errors';
import { describe, expect, it } from 'vitest';
import {
  contentHash,
  estimateJaccard,
  isNearDuplicate,
  maxTextLength,
  MemoryInputError,
  type MemoryInputReason,
  minhash,
  murmurHash3,
  nearDuplicateThreshold,
  normalizeText,
  shingles,
  validateText,
} from './text.js';

function refusal(value: unknown, field?: string): MemoryInputError {
  try {
    validateText(value, field);
  } catch (error) {
    expect(error).toBeInstanceOf(MemoryInputError);
    expect(RosterError.isInstance(error)).toBe(true);
    return error as MemoryInputError;
  }
  throw new Error(`expected ${JSON.stringify(value)} to be refused`);
}

describe('validateText', () => {
  it('accepts ordinary text and trims the whitespace around it', () => {
    expect(validateText("  Ada's phone is 555-1234\n")).toBe("Ada's phone is 555-1234");
    expect(validateText('Il compleanno di Ada è il 10 dicembre 🎂')).toBe('Il compleanno di Ada è il 10 dicembre 🎂');
  });

  it.each<[string, unknown, MemoryInputReason, string]>([
    ['an empty string', '', 'empty', 'text is empty: say what to remember'],
    ['only whitespace', ' \n\t ', 'empty', 'text is empty: say what to remember'],
    ['a NUL byte', 'Ada\u0000Lovelace', 'nul', 'text contains a NUL byte'],
    ['a lone high surrogate', 'broken \uD83D text', 'lone-surrogate', 'text contains a lone surrogate (broken Unicode)'],
    ['a lone low surrogate', '\uDE00 at the start', 'lone-surrogate', 'text contains a lone surrogate (broken Unicode)'],
    ['a number', 42, 'not-text', 'text is not text'],
    ['null', null, 'not-text', 'text is not text'],
    ['undefined', undefined, 'not-text', 'text is not text'],
    ['an object', { text: 'Ada' }, 'not-text', 'text is not text'],
    ['an array', ['Ada'], 'not-text', 'text is not text'],
  ])('refuses %s', (_name, value, reason, message) => {
    const error = refusal(value);
    expect(error.code).toBe('memory_input_invalid');
    expect(error.reason).toBe(reason);
    expect(error.field).toBe('text');
    expect(error.message.startsWith(message)).toBe(true);
  });

  it('names the field it was given', () => {
    const error = refusal('   ', 'correction');
    expect(error.message).toBe('correction is empty: say what to remember');
    expect(error.field).toBe('correction');
  });

  it('accepts exactly the most, counted in code points after trimming', () => {
    const emoji = '😀'.repeat(maxTextLength);
    expect(emoji.length).toBe(2 * maxTextLength);
    expect(validateText(emoji)).toBe(emoji);
    const padded = `   ${'a'.repeat(maxTextLength)}   `;
    expect(validateText(padded)).toBe('a'.repeat(maxTextLength));
  });

  it('refuses text over the most, saying how long it is', () => {
    const error = refusal('a'.repeat(4012));
    expect(error.reason).toBe('too-long');
    expect(error.message).toBe('text is 4,012 characters; the most is 4,000');
    expect(refusal('😀'.repeat(maxTextLength + 1)).reason).toBe('too-long');
  });

  it('accepts a well-formed surrogate pair (control for the lone one)', () => {
    expect(validateText('broken \uD83D\uDE00 text')).toBe('broken 😀 text');
  });
});

describe('normalizeText and contentHash', () => {
  it('folds case, accents, punctuation and apostrophes', () => {
    expect(normalizeText("Ada's phone is 555-1234!")).toBe('ada s phone is 555 1234');
    expect(normalizeText('ada’s PHONE is 555 1234')).toBe('ada s phone is 555 1234');
    expect(normalizeText('  Perché È così?  ')).toBe('perche e cosi');
    expect(normalizeText('ＡＤＡ ﬁle №5')).toBe('ada file no5');
    expect(normalizeText('...!!!')).toBe('');
  });

  it('keeps letters and digits of other scripts', () => {
    expect(normalizeText('Ада любит чай; 東京 2024')).toBe('ада любит чаи 東京 2024');
    expect(normalizeText('हिंदी, 한국어!')).toBe('हिदी 한국어');
  });

  it('hashes texts that differ only in form to the same value', () => {
    const hash = contentHash("Ada's phone is 555-1234!");
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(contentHash('ada’s PHONE is 555 1234')).toBe(hash);
    expect(contentHash("Ada's phone is 555-9999!")).not.toBe(hash);
  });
});

describe('shingles', () => {
  it('keeps the distinct content words, numbers included', () => {
    expect(shingles("Ada's phone number is 555-1234")).toEqual(['ada', 'phone', 'number', '555', '1234']);
    expect(shingles('The phone number of Ada is 555 1234, the phone')).toEqual(['phone', 'number', 'ada', '555', '1234']);
  });

  it('drops Italian function words and elisions', () => {
    expect(shingles("Il numero di telefono dell'amica di Ada è il 5")).toEqual(['numero', 'telefono', 'amica', 'ada', '5']);
  });

  it('keeps negations, which change the fact', () => {
    expect(shingles('Ada is not vegetarian')).toEqual(['ada', 'not', 'vegetarian']);
  });

  it('falls back to all words when every word is a stopword', () => {
    expect(shingles('it is what it is')).toEqual(['it', 'is', 'what']);
    expect(shingles('')).toEqual([]);
  });
});

describe('minhash', () => {
  it('uses the reference MurmurHash3 x86_32', () => {
    const bytes = (text: string) => new TextEncoder().encode(text);
    expect(murmurHash3(bytes(''), 0)).toBe(0);
    expect(murmurHash3(bytes(''), 1)).toBe(0x514e28b7);
    expect(murmurHash3(bytes(''), 0xffffffff)).toBe(0x81f16f39);
    expect(murmurHash3(bytes('test'), 0)).toBe(0xba6bd213);
    expect(murmurHash3(bytes('Hello, world!'), 0)).toBe(0xc0363e43);
    expect(murmurHash3(bytes('The quick brown fox jumps over the lazy dog'), 0)).toBe(0x2e4ff723);
  });

  it('is deterministic, and stable across versions (values are stored)', () => {
    const signature = minhash("Ada's phone number is 555-1234");
    expect(signature).toHaveLength(128);
    expect(minhash("Ada's phone number is 555-1234")).toEqual(signature);
    expect(signature.slice(0, 4)).toEqual([1308688855, 788643098, 379935600, 55692085]);
    for (const value of signature) {
      expect(Number.isInteger(value) && value >= 0 && value <= 0xffffffff).toBe(true);
    }
  });

  it('takes a size', () => {
    expect(minhash('Ada lives in Rome', 16)).toHaveLength(16);
    expect(minhash('Ada lives in Rome', 16)).toEqual(minhash('Ada lives in Rome').slice(0, 16));
    expect(() => minhash('Ada', 0)).toThrow(RosterError);
    expect(() => minhash('Ada', 1.5)).toThrow(RosterError);
  });

  it('refuses to compare signatures of different sizes', () => {
    expect(() => estimateJaccard(minhash('Ada', 64), minhash('Ada', 128))).toThrow(/64 and 128/);
  });
});

describe('near duplicates', () => {
  const original = minhash("Ada's phone number is 555-1234");

  it('finds a reworded fact', () => {
    const reworded = minhash('The phone number of Ada is 555 1234');
    expect(estimateJaccard(original, reworded)).toBeGreaterThanOrEqual(nearDuplicateThreshold);
    expect(isNearDuplicate(original, reworded)).toBe(true);
  });

  it('finds a reworded fact in Italian', () => {
    const a = minhash('Il numero di telefono di Ada è 555 1234');
    const b = minhash('Ada ha il numero di telefono 555-1234');
    expect(isNearDuplicate(a, b)).toBe(true);
  });

  it('does not take a different number for the same fact', () => {
    const different = minhash("Ada's phone number is 555-9999");
    expect(estimateJaccard(original, different)).toBeLessThan(nearDuplicateThreshold);
    expect(estimateJaccard(original, different)).toBeGreaterThan(0);
    expect(isNearDuplicate(original, different)).toBe(false);
  });

  it('does not take a negated fact for the same fact', () => {
    expect(isNearDuplicate(minhash('Ada is vegetarian'), minhash('Ada is not vegetarian'))).toBe(false);
  });

  it('does not match an unrelated fact', () => {
    expect(estimateJaccard(original, minhash('Grace prefers tea in the morning'))).toBeLessThan(0.2);
  });

  it('rates identical texts 1', () => {
    expect(estimateJaccard(original, minhash("Ada's phone number is 555-1234"))).toBe(1);
  });
});
