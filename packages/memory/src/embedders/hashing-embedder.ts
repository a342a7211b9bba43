import type { Embedder, EmbedOptions } from '@roster/contracts';
import { EmbedderError } from '@roster/errors';

/** Options of `createHashingEmbedder`. */
export interface HashingEmbedderOptions {
  /** Vector length; 256 by default. Part of the model id, so changing it means re-embedding. */
  dimensions?: number;
}

/**
 * Feature weights. Whole words carry the meaning, so they weigh most; a
 * bigram ("ada lives") adds word order and phrases but is rarer, so less; a
 * character n-gram is the weakest single signal, but a word yields many of
 * them, which is what lets "remember" meet "remembered", "Turin" meet "Turn"
 * and "lives" meet "live".
 */
const hashingFeatureWeights = { word: 1.0, bigram: 0.7, characterNgram: 0.5 } as const;

/** Lengths of the character n-grams taken from each space-padded word. */
const ngramLengths = [3, 4] as const;

const maxDimensions = 65_536;

/**
 * An embedder that needs no model and no network: feature hashing ("the
 * hashing trick") of words, word bigrams and character n-grams.
 *
 * Text is lower-cased, decomposed (NFD) and stripped of combining marks, so
 * "Café" and "cafe" are the same word; tokens are runs of Unicode letters and
 * digits. Features: each word, each pair of neighbouring words, and the 3- and
 * 4-character n-grams of each word padded with a space at both ends
 * (`' ada '` → `' ad'`, `'ada'`, `'da '`, `' ada'`, `'ada '`). Each feature is
 * hashed (FNV-1a over its UTF-8 bytes, then murmur3's finaliser) to an index,
 * and a second hash derived from the first picks a sign, so that collisions
 * cancel on average instead of piling up. A feature counted `tf` times in a
 * text adds `weight × (1 + ln tf)` (sublinear, so a repeated word does not
 * drown the rest); the vector is then L2-normalised.
 *
 * Empty text, or text with no letters or digits, has no features; its vector
 * would be all zeros, for which cosine similarity is undefined. It maps to a
 * fixed unit vector instead (1 at index 0, zeros elsewhere): well defined,
 * equal for all empty texts, and nearly orthogonal to real text.
 *
 * Deterministic across processes and machines. Any change to the features,
 * weights or hash changes the vectors, and must come with a new model id.
 */
export function createHashingEmbedder(options: HashingEmbedderOptions = {}): Embedder {
  const dimensions = options.dimensions ?? 256;
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > maxDimensions) {
    throw new EmbedderError(
      'embedder_options_invalid',
      `The hashing embedder needs dimensions to be an integer from 1 to ${maxDimensions}, got ${String(dimensions)}.`,
    );
  }
  return {
    model: `hashing-${dimensions}`,
    dimensions,
    local: true,
    async embed(texts: readonly string[], embedOptions?: EmbedOptions): Promise<number[][]> {
      embedOptions?.signal?.throwIfAborted();
      return texts.map((text) => hashText(text, dimensions));
    },
  };
}

/** The words of `text`: lower-cased, accents removed, runs of letters and digits. */
function hashingTokens(text: string): string[] {
  const folded = text.toLowerCase().normalize('NFD').replace(/\p{M}+/gu, '');
  return folded.match(/[\p{L}\p{N}]+/gu) ?? [];
}

function hashText(text: string, dimensions: number): number[] {
  const words = hashingTokens(text);
  // feature key → [weight, count]; keys carry a kind prefix so the word "ada"
  // and the trigram "ada" are different features.
  const features = new Map<string, [number, number]>();
  const add = (key: string, weight: number): void => {
    const entry = features.get(key);
    if (entry === undefined) features.set(key, [weight, 1]);
    else entry[1] += 1;
  };

  for (let index = 0; index < words.length; index += 1) {
    const word = words[index]!;
    add(`w ${word}`, hashingFeatureWeights.word);
    const next = words[index + 1];
    if (next !== undefined) add(`b ${word} ${next}`, hashingFeatureWeights.bigram);
    // Code points, not UTF-16 units, so a character outside the BMP is not split.
    const characters = Array.from(` ${word} `);
    for (const length of ngramLengths) {
      for (let start = 0; start + length <= characters.length; start += 1) {
        add(`c ${characters.slice(start, start + length).join('')}`, hashingFeatureWeights.characterNgram);
      }
    }
  }

  const vector = new Array<number>(dimensions).fill(0);
  for (const [key, [weight, count]] of features) {
    const hash = featureHash(key);
    const sign = (mix32((hash ^ 0x9e3779b9) >>> 0) & 1) === 0 ? 1 : -1;
    const slot = hash % dimensions;
    vector[slot] = vector[slot]! + sign * weight * (1 + Math.log(count));
  }

  let sum = 0;
  for (const value of vector) sum += value * value;
  // No features, or (in theory) features that cancel out exactly: the fixed unit vector.
  if (sum === 0) {
    vector[0] = 1;
    return vector;
  }
  const norm = Math.sqrt(sum);
  return vector.map((value) => value / norm);
}

const encoder = new TextEncoder();

/** FNV-1a (32 bit) over the UTF-8 bytes of `key`, finished with murmur3's fmix32 for better low bits. */
function featureHash(key: string): number {
  let hash = 0x811c9dc5;
  for (const byte of encoder.encode(key)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return mix32(hash >>> 0);
}

/** murmur3's 32-bit finaliser: every input bit affects every output bit. */
function mix32(value: number): number {
  let hash = value;
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
