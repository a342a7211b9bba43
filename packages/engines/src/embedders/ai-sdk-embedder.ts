/**
 * The one embedder behind every AI SDK embedding model, and the checks of the
 * options the factories in ai-sdk-embedders.ts share.
 */
import type { EmbeddingModel } from 'ai';
import { normalizeVector, type Embedder, type EmbedOptions } from '@roster/contracts';
import { EmbedderError } from '@roster/errors';
import { aiSdk } from '../lazy.js';

const defaultTimeoutMs = 30_000;
const defaultMaxBatch = 64;
const defaultMaxRetries = 2;
const excerptLength = 200;

/** Everything an `AiSdkEmbedder` needs: the SDK model, its limits, and what to tell people when it fails. */
interface AiSdkEmbedderSettings {
  id: string;
  local: boolean;
  /** Known length, or 0 to learn it from the first answer. */
  dimensions: number;
  /** The provider's model, loaded with its client by the first batch. */
  model: () => Promise<Exclude<EmbeddingModel, string>>;
  /** The provider's own options (the dimensions asked for), keyed by provider. */
  providerOptions?: Record<string, Record<string, number>>;
  timeoutMs: number;
  maxBatch: number;
  maxRetries: number;
  /** The endpoint, named in messages. */
  url: string;
  /** Scrubbed from every message, should a server echo it back. */
  secret: string | undefined;
  label: string;
  unreachableHint: string;
  statusHint: (status: number) => string;
}

/** The checked limits every embedder shares. */
export function commonSettings(options: { timeoutMs?: number; maxBatch?: number; maxRetries?: number }): Pick<
  AiSdkEmbedderSettings,
  'timeoutMs' | 'maxBatch' | 'maxRetries'
> {
  return {
    timeoutMs: checkPositiveInteger(options.timeoutMs ?? defaultTimeoutMs, 'timeoutMs'),
    maxBatch: checkPositiveInteger(options.maxBatch ?? defaultMaxBatch, 'maxBatch'),
    maxRetries: checkCount(options.maxRetries ?? defaultMaxRetries, 'maxRetries'),
  };
}

/**
 * One embedder over any AI SDK embedding model: `embedMany` per batch (the
 * SDK retries 429, 5xx and dropped connections), then the checks the SDK does
 * not make (one vector per text, one length for every vector, non-zero) and
 * normalisation. Failures become `EmbedderError`s that never carry the texts
 * nor the key: the SDK's errors hold the request body, so none is kept as a
 * cause.
 */
export class AiSdkEmbedder implements Embedder {
  readonly model: string;
  readonly local: boolean;
  #dimensions: number;
  readonly #settings: AiSdkEmbedderSettings;

  constructor(settings: AiSdkEmbedderSettings) {
    this.model = settings.id;
    this.local = settings.local;
    this.#dimensions = settings.dimensions;
    this.#settings = settings;
  }

  get dimensions(): number {
    return this.#dimensions;
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<number[][]> {
    const vectors: number[][] = [];
    for (let start = 0; start < texts.length; start += this.#settings.maxBatch) {
      vectors.push(...(await this.#embedBatch(texts.slice(start, start + this.#settings.maxBatch), options)));
    }
    return vectors;
  }

  async #embedBatch(texts: readonly string[], options: EmbedOptions): Promise<number[][]> {
    const { timeoutMs } = this.#settings;
    const callerSignal = options.signal;
    const maxRetries = options.maxRetries === undefined ? this.#settings.maxRetries : checkCount(options.maxRetries, 'maxRetries');
    callerSignal?.throwIfAborted();
    // The client first (loaded once, by the first batch), so that loading it never counts against the timeout.
    const [sdk, model] = await Promise.all([aiSdk(), this.#settings.model()]);
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = callerSignal === undefined ? timeout : AbortSignal.any([callerSignal, timeout]);

    let embeddings: number[][];
    try {
      ({ embeddings } = await sdk.embedMany({
        model,
        values: [...texts],
        maxRetries,
        maxParallelCalls: 1,
        abortSignal: signal,
        ...(this.#settings.providerOptions === undefined ? {} : { providerOptions: this.#settings.providerOptions }),
      }));
    } catch (error) {
      if (callerSignal?.aborted) throw callerSignal.reason;
      if (timeout.aborted) {
        throw new EmbedderError(
          'embedder_timeout',
          `${this.#settings.label} did not answer within ${timeoutMs} ms at ${this.#settings.url}: it may be overloaded or still loading the model; try again, or ${this.#settings.unreachableHint}.`,
          { retryable: true },
        );
      }
      throw this.#failure(sdk, error);
    }

    if (embeddings.length !== texts.length) throw this.#badResponse(`${embeddings.length} embeddings for ${texts.length} inputs`);
    const expected = this.#dimensions === 0 ? embeddings[0]?.length ?? 0 : this.#dimensions;
    const normalized: number[][] = [];
    for (const [index, vector] of embeddings.entries()) {
      if (vector.length === 0 || vector.length !== expected) {
        throw this.#badResponse(`a vector of ${vector.length} dimensions for input ${index}, expected ${expected}`);
      }
      const unit = normalizeVector(vector);
      if (unit === undefined) throw this.#badResponse(`a zero or non-finite vector for input ${index}`);
      normalized.push(unit);
    }
    if (this.#dimensions === 0 && expected > 0) this.#dimensions = expected;
    return normalized;
  }

  /** The SDK's failure (the last one, after its retries) as an `EmbedderError` that says whether trying again may help. */
  #failure(sdk: typeof import('ai'), error: unknown): EmbedderError {
    const { label, url } = this.#settings;
    const last = sdk.RetryError.isInstance(error) ? error.lastError : error;
    if (!sdk.APICallError.isInstance(last)) {
      return new EmbedderError('embedder_failed', this.#scrub(`${label} at ${url} failed: ${errorText(last)}.`), { storable: this.#scrub(`${label} at ${url} failed.`) });
    }
    const status = last.statusCode;
    if (status === undefined) {
      // Never answered: the SDK puts undici's reason (ECONNREFUSED …) in the cause.
      const cause: unknown = last.cause;
      const reason = cause instanceof Error && cause.message !== '' ? cause.message : last.message;
      return new EmbedderError(
        'embedder_unreachable',
        this.#scrub(`${label} is not reachable at ${url} (${reason}): ${this.#settings.unreachableHint}.`),
        { cause, retryable: last.isRetryable },
      );
    }
    if (status >= 200 && status <= 299) {
      // The SDK read the answer and refused it: not JSON, or not the shape of the API.
      const excerpt = this.#excerpt(last.responseBody ?? '');
      return this.#badResponse(`an answer its client could not read (${last.message.replace(/\.$/, '')}${excerpt === '' ? ', empty' : `: ${excerpt}`})`, status);
    }
    const excerpt = this.#excerpt(last.responseBody ?? last.message);
    return new EmbedderError(
      `embedder_http_${status}`,
      this.#scrub(`${label} answered HTTP ${status} at ${url}${excerpt === '' ? '' : ` (${excerpt})`}: ${this.#settings.statusHint(status)}.`),
      { status, retryable: last.isRetryable, storable: this.#scrub(`${label} answered HTTP ${status} at ${url}: ${this.#settings.statusHint(status)}.`) },
    );
  }

  #badResponse(what: string, status?: number): EmbedderError {
    const advice = `check that the address serves the ${this.model} embeddings API.`;
    const storable = this.#scrub(`${this.#settings.label} at ${this.#settings.url} sent an answer Roster could not use: ${advice}`);
    return new EmbedderError(
      'embedder_bad_response',
      this.#scrub(`${this.#settings.label} at ${this.#settings.url} sent ${what}: ${advice}`),
      status === undefined ? { retryable: false, storable } : { status, retryable: false, storable },
    );
  }

  /** A short, single-line excerpt of a response body. */
  #excerpt(text: string): string {
    const line = text.replace(/\s+/g, ' ').trim();
    return line.length > excerptLength ? `${line.slice(0, excerptLength)}…` : line;
  }

  /** `text` without the API key, nor anything shaped like one, should a server echo it back. */
  #scrub(text: string): string {
    const secret = this.#settings.secret;
    const clean = secret === undefined || secret === '' ? text : text.split(secret).join('[redacted]');
    return clean.replace(keyShaped, '[redacted]');
  }
}

/** Tokens shaped like API keys, as the engines scrub them. */
const keyShaped = /\b(?:sk|pk|rk|key)-[A-Za-z0-9_*.-]{6,}|\bBearer\s+\S+/gi;

function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/\.$/, '');
}

export function genericStatusHint(status: number): string {
  if (status === 408 || status === 429) return 'the server is busy; try again later';
  if (status >= 500) return 'the server failed; try again later, or check its logs';
  return 'check the model name and the server address in ROSTER_EMBEDDER';
}

/** `baseUrl` without trailing slashes, after checking it is an http(s) URL without credentials. */
export function checkBaseUrl(baseUrl: string, what: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new EmbedderError('embedder_options_invalid', `The ${what} needs an http(s) base URL, got one that does not parse.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new EmbedderError('embedder_options_invalid', `The ${what} needs an http(s) base URL, got "${url.protocol}".`);
  }
  if (url.username !== '' || url.password !== '') {
    // The URL ends up in the model id and in messages: credentials must not.
    throw new EmbedderError('embedder_options_invalid', `The ${what} base URL must not carry credentials: pass the key as an API key instead.`);
  }
  return baseUrl.trim().replace(/\/+$/, '');
}

export function checkDimensions(dimensions: number | undefined): number | undefined {
  return dimensions === undefined ? undefined : checkPositiveInteger(dimensions, 'dimensions');
}

function checkCount(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 0) {
    throw new EmbedderError('embedder_options_invalid', `The embedder option ${name} must be a whole number of at least 0, got ${String(value)}.`);
  }
  return value;
}

function checkPositiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new EmbedderError('embedder_options_invalid', `The embedder option ${name} must be a positive integer, got ${String(value)}.`);
  }
  return value;
}
