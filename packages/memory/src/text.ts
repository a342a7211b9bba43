/**
 * The text of a memory: validation at the door, and the normal form behind
 * content hashes, tombstones and near-duplicate detection.
 *
 * Stored values depend on these functions (`keyedContentHash` and
 * `keyedMinhash` make tombstones, `contentHash` and `minhash` find live
 * duplicates), so their output must not change between versions, runs or
 * machines: change them only with a migration that recomputes what was
 * stored.
 */
import { createHash, createHmac } from 'node:crypto';
import type { InstallationKey } from '@roster/config';
import { RosterError } from '@roster/errors';

/** The most code points a memory's text may hold, after trimming. */
export const maxTextLength = 4000;

/** Why a text was refused. */
export type MemoryInputReason = 'empty' | 'too-long' | 'nul' | 'lone-surrogate' | 'not-text';

/** A text offered to memory was refused; `message` names the field and what to do. */
export class MemoryInputError extends RosterError {
  readonly reason: MemoryInputReason;
  /** The name of the refused input, as the caller called it (`text`, `correction`, …). */
  readonly field: string;

  constructor(reason: MemoryInputReason, field: string, message: string) {
    super('memory_input_invalid', message);
    this.name = 'MemoryInputError';
    this.reason = reason;
    this.field = field;
  }
}

function countCodePoints(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/**
 * Returns `value` trimmed of surrounding whitespace, or throws
 * `MemoryInputError` when it is not a string, holds a NUL or a lone surrogate,
 * is empty after trimming, or is longer than `maxTextLength` code points.
 */
export function validateText(value: unknown, field = 'text'): string {
  if (typeof value !== 'string') {
    const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
    throw new MemoryInputError('not-text', field, `${field} is not text (got ${got}): send a string`);
  }
  if (value.includes('\u0000')) {
    throw new MemoryInputError('nul', field, `${field} contains a NUL byte: remove it and send the text again`);
  }
  // With the `u` flag a well-formed surrogate pair is one code point, so only a lone half matches.
  if (/[\uD800-\uDFFF]/u.test(value)) {
    throw new MemoryInputError(
      'lone-surrogate',
      field,
      `${field} contains a lone surrogate (broken Unicode): send valid UTF-8 or UTF-16 text`,
    );
  }
  const text = value.trim();
  if (text === '') {
    throw new MemoryInputError('empty', field, `${field} is empty: say what to remember`);
  }
  // UTF-16 length bounds the code point count from above, so most texts skip the count.
  if (text.length > maxTextLength) {
    const length = countCodePoints(text);
    if (length > maxTextLength) {
      throw new MemoryInputError(
        'too-long',
        field,
        `${field} is ${length.toLocaleString('en-US')} characters; the most is ${maxTextLength.toLocaleString('en-US')}`,
      );
    }
  }
  return text;
}

/**
 * The normal form used for hashing and tombstones: NFKC, lower case, accents
 * stripped, every run of characters that are neither letters nor digits turned
 * into one space, trimmed. `"Ada’s PHONE is 555 1234"` → `"ada s phone is 555 1234"`.
 *
 * Accents are the non-spacing marks (`\p{Mn}`) left by NFD. Spacing marks
 * (`\p{Mc}`, e.g. Devanagari vowel signs) are kept as part of their word
 * rather than treated as separators, which would split words in those scripts.
 * A final NFC recomposes what NFD split and no mark was removed from (Hangul).
 */
export function normalizeText(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .normalize('NFD')
    .replace(/\p{Mn}+/gu, '')
    .replace(/[^\p{L}\p{N}\p{M}]+/gu, ' ')
    .trim()
    .normalize('NFC');
}

/**
 * SHA-256, hex, of the UTF-8 bytes of `normalizeText(text)`: equal for texts
 * that differ only in case, accents or punctuation. Unkeyed, so anyone can
 * recompute it from a guess: it sits only beside the text it hashes (live
 * facts, lessons, mirror cases) and goes when the text goes. What outlives a
 * text uses `keyedContentHash`.
 */
export function contentHash(text: string): string {
  return createHash('sha256').update(normalizeText(text), 'utf8').digest('hex');
}

/**
 * HMAC-SHA256, hex, keyed with the installation key (for this purpose), of
 * the UTF-8 bytes of `normalizeText(text)`: what a tombstone and the audit
 * log keep of a text. Without the key, hashing every guess of a short secret
 * ("my locker code is 0000" … "9999") finds nothing.
 */
export function keyedContentHash(key: InstallationKey, text: string): string {
  return createHmac('sha256', key.derive(contentHashPurpose)).update(normalizeText(text), 'utf8').digest('hex');
}

const contentHashPurpose = 'roster/content-hash/v1';
const minhashPurpose = 'roster/minhash/v1';

/**
 * Function words of English and Italian, dropped from shingles so that a
 * reworded fact ("the phone number of Ada") keeps the same content words as
 * the original ("Ada's phone number"). Negations (not, no, non) are kept on
 * purpose: "Ada is not vegetarian" is a different fact. Names that are also
 * words (Will, US) are not listed. Stored in normal form ("è" → "e").
 */
const stopwords: ReadonlySet<string> = new Set(
  [
    // English
    'the', 'a', 'an', 'is', 'are', 'was', 'were', 'be', 'been', 'am', 'of', 'to', 'in', 'on', 'at', 'by',
    'for', 'with', 'from', 'as', 'into', 'about', 'my', 'your', 'his', 'her', 'its', 'our', 'their', 'me',
    'him', 'them', 'i', 'you', 'he', 'she', 'it', 'we', 'they', 'that', 'this', 'these', 'those', 'and',
    'or', 'but', 'so', 'than', 'then', 'there', 'has', 'have', 'had', 'do', 'does', 'did', 'what', 'which',
    'who', 'also',
    // Italian
    'il', 'lo', 'la', 'gli', 'le', 'un', 'uno', 'una', 'di', 'da', 'del', 'della', 'dei', 'delle', 'dello',
    'degli', 'dell', 'al', 'alla', 'ai', 'alle', 'allo', 'agli', 'all', 'nel', 'nella', 'nei', 'nelle',
    'nell', 'sul', 'sulla', 'sull', 'con', 'per', 'tra', 'fra', 'che', 'è', 'e', 'ed', 'o', 'mio', 'mia',
    'miei', 'mie', 'tuo', 'tua', 'suo', 'sua', 'sono', 'ha', 'ho', 'hanno', 'come', 'ma', 'si', 'ci',
    'anche', 'questo', 'questa', 'quello', 'quella',
  ].map(normalizeText),
);

const singleLetter = /^\p{L}$/u;

/**
 * The distinct content words of `text`, in order of first appearance: the
 * words of `normalizeText(text)` without stopwords and without single letters
 * (the `s` that "Ada's" leaves, Italian elisions like `l'`). Numbers, single
 * digits included, are content words: "555-1234" and "555-9999" differ. A text
 * made only of stopwords falls back to all its words.
 */
export function shingles(text: string): string[] {
  const normalized = normalizeText(text);
  if (normalized === '') return [];
  const words = normalized.split(' ');
  const content = words.filter((word) => !stopwords.has(word) && !singleLetter.test(word));
  return [...new Set(content.length > 0 ? content : words)];
}

/**
 * MurmurHash3, x86 32-bit variant, of `bytes` with `seed`; an unsigned 32-bit
 * integer. The reference algorithm, so signatures can be recomputed anywhere.
 */
export function murmurHash3(bytes: Uint8Array, seed: number): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let hash = seed >>> 0;
  const blockEnd = bytes.length - (bytes.length % 4);
  let index = 0;
  for (; index < blockEnd; index += 4) {
    let block =
      (bytes[index] ?? 0) |
      ((bytes[index + 1] ?? 0) << 8) |
      ((bytes[index + 2] ?? 0) << 16) |
      ((bytes[index + 3] ?? 0) << 24);
    block = Math.imul(block, c1);
    block = (block << 15) | (block >>> 17);
    block = Math.imul(block, c2);
    hash ^= block;
    hash = (hash << 13) | (hash >>> 19);
    hash = (Math.imul(hash, 5) + 0xe6546b64) | 0;
  }
  const remaining = bytes.length - blockEnd;
  if (remaining > 0) {
    let tail = 0;
    if (remaining === 3) tail ^= (bytes[index + 2] ?? 0) << 16;
    if (remaining >= 2) tail ^= (bytes[index + 1] ?? 0) << 8;
    tail ^= bytes[index] ?? 0;
    tail = Math.imul(tail, c1);
    tail = (tail << 15) | (tail >>> 17);
    tail = Math.imul(tail, c2);
    hash ^= tail;
  }
  hash ^= bytes.length;
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

const emptySlot = 0xffffffff;
const encoder = new TextEncoder();

function validSize(size: number): void {
  if (!Number.isInteger(size) || size < 1) {
    throw new RosterError('minhash_size_invalid', `a MinHash signature needs a whole size of at least 1, not ${size}`);
  }
}

/** Position `i` of the signature: the least `murmurHash3(element, seed = i)` over the elements. */
function signatureOf(elements: readonly Uint8Array[], size: number): number[] {
  const signature: number[] = [];
  for (let seed = 0; seed < size; seed += 1) {
    let least = emptySlot;
    for (const bytes of elements) {
      const hash = murmurHash3(bytes, seed);
      if (hash < least) least = hash;
    }
    signature.push(least);
  }
  return signature;
}

/**
 * A MinHash signature of `shingles(text)`: position `i` holds the least
 * `murmurHash3(utf8(shingle), seed = i)` over the shingles, as an unsigned
 * 32-bit integer (fits Postgres `bigint`). The share of equal positions between
 * two signatures estimates the Jaccard similarity of their shingle sets.
 * A text without words gets `0xffffffff` in every position. Unkeyed, like
 * `contentHash`: for signatures kept beside their text.
 */
export function minhash(text: string, size = 128): number[] {
  validSize(size);
  return signatureOf(shingles(text).map((shingle) => encoder.encode(shingle)), size);
}

/**
 * A keyed MinHash signature of `shingles(text)`, as a tombstone keeps it:
 * each shingle first goes through HMAC-SHA256 with the installation key (for
 * this purpose), and position `i` holds the least `murmurHash3(hmac, seed =
 * i)`. Two texts' keyed signatures agree as often as their unkeyed ones would
 * (the same estimate of Jaccard similarity), but without the key no guess of
 * a word can be turned into a value to look for.
 */
export function keyedMinhash(key: InstallationKey, text: string, size = 128): number[] {
  validSize(size);
  const words = shingles(text);
  if (words.length === 0) return new Array<number>(size).fill(emptySlot);
  const secret = key.derive(minhashPurpose);
  return signatureOf(
    words.map((shingle) => createHmac('sha256', secret).update(shingle, 'utf8').digest()),
    size,
  );
}

/** The share of positions where two MinHash signatures agree: an estimate of their texts' Jaccard similarity. */
export function estimateJaccard(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) {
    throw new RosterError(
      'minhash_size_mismatch',
      `MinHash signatures of ${a.length} and ${b.length} values cannot be compared: compute both with the same size`,
    );
  }
  if (a.length === 0) {
    throw new RosterError('minhash_size_invalid', 'MinHash signatures are empty: compute them with a size of at least 1');
  }
  let equal = 0;
  for (let index = 0; index < a.length; index += 1) {
    if (a[index] === b[index]) equal += 1;
  }
  return equal / a.length;
}

/** The estimated Jaccard similarity at and above which two texts say the same thing. */
export const nearDuplicateThreshold = 0.8;

/** Whether two MinHash signatures are close enough to be the same fact reworded. */
export function isNearDuplicate(a: readonly number[], b: readonly number[]): boolean {
  return estimateJaccard(a, b) >= nearDuplicateThreshold;
}
