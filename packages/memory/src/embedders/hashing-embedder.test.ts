import { describe, expect, it } from 'vitest';
import { EmbedderError } from '@roster/errors';
import { createHashingEmbedder } from './hashing-embedder.js';

function dot(left: readonly number[], right: readonly number[]): number {
  let sum = 0;
  for (let index = 0; index < left.length; index += 1) sum += left[index]! * right[index]!;
  return sum;
}

function length(vector: readonly number[]): number {
  return Math.sqrt(dot(vector, vector));
}

/** Cosine similarity of two texts under a fresh 256-dimension hashing embedder. */
async function similarity(left: string, right: string): Promise<number> {
  const [a, b] = await createHashingEmbedder().embed([left, right]);
  return dot(a!, b!) / (length(a!) * length(b!));
}

describe('createHashingEmbedder', () => {
  it('describes itself as a local model whose id carries its dimensions', () => {
    const embedder = createHashingEmbedder();
    expect(embedder.model).toBe('hashing-256');
    expect(embedder.dimensions).toBe(256);
    expect(embedder.local).toBe(true);
    expect(createHashingEmbedder({ dimensions: 64 }).model).toBe('hashing-64');
  });

  it('returns one unit-length vector of `dimensions` numbers per text, in order', async () => {
    const texts = ['Ada lives in Turin', 'the build failed on Tuesday', 'Ünïcödé and 東京 and emoji 🎉'];
    for (const dimensions of [256, 64]) {
      const vectors = await createHashingEmbedder({ dimensions }).embed(texts);
      expect(vectors).toHaveLength(texts.length);
      for (const vector of vectors) {
        expect(vector).toHaveLength(dimensions);
        expect(length(vector)).toBeCloseTo(1, 10);
      }
      // In order: the vector of a text alone equals its vector within the batch.
      const [second] = await createHashingEmbedder({ dimensions }).embed([texts[1]!]);
      expect(vectors[1]).toEqual(second);
      expect(vectors[0]).not.toEqual(second);
    }
  });

  it('is deterministic across instances and calls', async () => {
    const texts = ['Ada prefers green tea', 'remind me on Friday'];
    const first = await createHashingEmbedder().embed(texts);
    const second = await createHashingEmbedder().embed(texts);
    const third = await createHashingEmbedder().embed(texts);
    expect(second).toEqual(first);
    expect(third).toEqual(first);
  });

  it('ranks a related sentence above unrelated ones', async () => {
    const query = 'where does Ada live';
    const related = await similarity(query, 'Ada lives in Turin');
    const unrelated = [
      await similarity(query, 'the build failed on Tuesday'),
      await similarity(query, 'Bob prefers coffee over tea'),
      await similarity(query, 'deploy the gateway to production'),
    ];
    for (const score of unrelated) expect(related).toBeGreaterThan(score + 0.05);
  });

  it('brings morphological variants and typos together through character n-grams', async () => {
    const variant = await similarity('remember', 'remembered');
    const typo = await similarity('remember', 'remembr');
    const unrelated = await similarity('remember', 'tuesday');
    // The words differ, so all overlap comes from the shared n-grams (' re', 'rem', 'emem', …).
    expect(variant).toBeGreaterThan(0.4);
    expect(typo).toBeGreaterThan(0.4);
    expect(variant).toBeGreaterThan(unrelated + 0.3);
    expect(typo).toBeGreaterThan(unrelated + 0.3);
  });

  it('ignores case and accents', async () => {
    const [accented, plain, other] = await createHashingEmbedder().embed(['Café in ZÜRICH', 'cafe in zurich', 'cafe in turin']);
    expect(accented).toEqual(plain);
    expect(other).not.toEqual(plain);
  });

  it('maps text without words to a fixed unit vector instead of a zero vector', async () => {
    const vectors = await createHashingEmbedder({ dimensions: 16 }).embed(['', '   \n', '?!…', 'Ada']);
    const fixed = [1, ...new Array<number>(15).fill(0)];
    expect(vectors[0]).toEqual(fixed);
    expect(vectors[1]).toEqual(fixed);
    expect(vectors[2]).toEqual(fixed);
    expect(vectors[3]).not.toEqual(fixed);
  });

  it('rejects dimensions that are not a positive integer', () => {
    for (const dimensions of [0, -1, 2.5, Number.NaN]) {
      let caught: unknown;
      try {
        createHashingEmbedder({ dimensions });
      } catch (error) {
        caught = error;
      }
      expect(EmbedderError.isInstance(caught)).toBe(true);
      expect((caught as EmbedderError).code).toBe('embedder_options_invalid');
    }
  });

  it('honours an aborted signal', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stopping'));
    await expect(createHashingEmbedder().embed(['Ada'], { signal: controller.signal })).rejects.toThrow('stopping');
  });
});
