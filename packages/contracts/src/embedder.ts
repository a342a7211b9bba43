/** Options of one `embed` call. */
export interface EmbedOptions {
  /**
   * Lets the caller give up (a shutting-down worker, a cancelled request).
   * An aborted call rejects with the signal's own reason, not an
   * `EmbedderError`: the caller asked for it, so there is nothing to retry.
   */
  signal?: AbortSignal;
  /**
   * At most this many retries of a failed request, for this call, by
   * embedders that retry (429, 5xx, a dropped connection); their own setting
   * when absent. Search asks for 0: a person is waiting, and full text
   * answers while a remote embedder is down, where a retry would make every
   * turn wait out the backoff first. Embedders that never fail ignore it.
   */
  maxRetries?: number;
}

/**
 * Turns texts into vectors for memory search.
 *
 * The contract is small on purpose: memory stores `model` and `dimensions`
 * beside every vector and only compares vectors of the same model, so an
 * implementation owns its client, batching and error mapping.
 */
export interface Embedder {
  /**
   * Stable id stored with every vector, e.g. 'hashing-256',
   * 'ollama:nomic-embed-text', 'openai:text-embedding-3-small'. Vectors of
   * different models are not comparable, so changing it means re-embedding.
   */
  readonly model: string;
  /**
   * Length of every vector this embedder returns; the store sizes its
   * column and index with it. Remote embedders that were not told their size
   * report 0 until their first answer teaches it.
   */
  readonly dimensions: number;
  /**
   * true when vectors are computed in this process or on this machine
   * (written in the same transaction as the fact, allowed under
   * PRIVACY=strict); false for remote ones (written by a job).
   */
  readonly local: boolean;
  /**
   * L2-normalised vectors, one per input, same order. Normalised so that
   * cosine similarity is a plain dot product and stores can use inner-product
   * indexes. Rejects with an `EmbedderError` when the embedder fails.
   */
  embed(texts: readonly string[], options?: EmbedOptions): Promise<number[][]>;
}

/**
 * `vector` scaled to unit length, or undefined when it has no length (all
 * zeros) or holds a non-finite number.
 */
export function normalizeVector(vector: readonly number[]): number[] | undefined {
  let sum = 0;
  for (const value of vector) {
    if (!Number.isFinite(value)) return undefined;
    sum += value * value;
  }
  const norm = Math.sqrt(sum);
  if (norm === 0 || !Number.isFinite(norm)) return undefined;
  return vector.map((value) => value / norm);
}
