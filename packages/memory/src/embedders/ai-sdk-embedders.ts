import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { isLoopbackUrl } from '@roster/config';
import { RosterError } from '@roster/errors';
import { APICallError, embedMany, RetryError, type EmbeddingModel } from 'ai';
import { createOllama } from 'ollama-ai-provider-v2';
import { EmbedderError, normalizeVector, type Embedder, type EmbedOptions } from './embedder.js';
import { createHashingEmbedder } from './hashing-embedder.js';

/** The `fetch` an embedder's client calls; Node's global one unless a proxy supplies another. */
export type FetchFunction = typeof globalThis.fetch;

/** Options of `createOpenAICompatibleEmbedder`. */
export interface OpenAICompatibleEmbedderOptions {
  /** The API root, e.g. `http://127.0.0.1:1234/v1`; `/embeddings` is appended. No credentials in it: use `apiKey`. */
  baseUrl: string;
  /** The model name the server knows, e.g. `text-embedding-3-small`. */
  model: string;
  /** Sent as `Authorization: Bearer <apiKey>` when given; never logged nor put in a message. */
  apiKey?: string;
  /** Asked of the server (`dimensions` in the request) when given; otherwise learned from the first answer. */
  dimensions?: number;
  /** How long one batch may take, retries included, in milliseconds; 30000 by default. */
  timeoutMs?: number;
  /** At most this many texts per request; 64 by default. */
  maxBatch?: number;
  /**
   * Retries of a batch that failed in a way worth retrying (429, 5xx, a
   * dropped connection), by the AI SDK's own loop, which honours
   * `retry-after`; 2 by default, 0 to fail at once.
   */
  maxRetries?: number;
  fetch?: FetchFunction;
}

/** Options of `createOpenAIEmbedder`. */
export interface OpenAIEmbedderOptions extends Omit<OpenAICompatibleEmbedderOptions, 'baseUrl' | 'apiKey'> {
  /** Required; typed as possibly undefined so that the caller can pass `config.OPENAI_API_KEY` and get a clear error. */
  apiKey: string | undefined;
  /** `https://api.openai.com/v1` by default (OPENAI_BASE_URL, for a proxy). */
  baseUrl?: string;
}

/** Options of `createOllamaEmbedder`. */
export interface OllamaEmbedderOptions {
  /** Where Ollama listens; `http://127.0.0.1:11434` by default (OLLAMA_URL). */
  baseUrl?: string;
  /** An embedding model pulled into Ollama, e.g. `nomic-embed-text`. */
  model: string;
  /** How long one batch may take, retries included, in milliseconds; 30000 by default (a cold model takes a while to load). */
  timeoutMs?: number;
  /** At most this many texts per request; 64 by default. */
  maxBatch?: number;
  /** As for `OpenAICompatibleEmbedderOptions.maxRetries`. */
  maxRetries?: number;
  fetch?: FetchFunction;
}

/** The keys and addresses `parseEmbedderReference` may need, taken from the parsed configuration. */
export interface EmbedderKeys {
  /** OPENAI_API_KEY; only ever sent to the OpenAI base URL, never to an `openai-compatible:` server. */
  openaiApiKey?: string;
  /** OPENAI_BASE_URL. */
  openaiBaseUrl?: string;
  /** OLLAMA_URL. */
  ollamaUrl?: string;
}

const defaultOpenAIBaseUrl = 'https://api.openai.com/v1';
const defaultOllamaUrl = 'http://127.0.0.1:11434';
const defaultTimeoutMs = 30_000;
const defaultMaxBatch = 64;
const defaultMaxRetries = 2;
const excerptLength = 200;

/**
 * An embedder for any server that speaks the OpenAI embeddings API (LM
 * Studio, vLLM, llama.cpp, LiteLLM, OpenAI itself), through the AI SDK's
 * OpenAI-compatible provider: POST `<baseUrl>/embeddings`, in batches of
 * `maxBatch`, one batch after the other.
 *
 * `dimensions` is the configured value, or 0 until the first answer teaches
 * it; from then on every answer must have that length. Model id:
 * `openai-compatible:<baseUrl>#<model>`. Not local: the server may be
 * anywhere, and may forward the text further.
 */
export function createOpenAICompatibleEmbedder(options: OpenAICompatibleEmbedderOptions): Embedder {
  const baseUrl = checkBaseUrl(options.baseUrl, 'openai-compatible embedder');
  const dimensions = checkDimensions(options.dimensions);
  const apiKey = options.apiKey === '' ? undefined : options.apiKey;
  const provider = createOpenAICompatible({
    name: 'openai-compatible',
    baseURL: baseUrl,
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  return new AiSdkEmbedder({
    ...commonSettings(options),
    id: `openai-compatible:${baseUrl}#${options.model}`,
    local: false,
    dimensions: dimensions ?? 0,
    model: provider.embeddingModel(options.model),
    ...(dimensions === undefined ? {} : { providerOptions: { openaiCompatible: { dimensions } } }),
    url: `${baseUrl}/embeddings`,
    secret: apiKey,
    label: 'The OpenAI-compatible embeddings server',
    unreachableHint: 'start the server, or change the base URL in ROSTER_EMBEDDER',
    statusHint: (status) => {
      if (status === 401 || status === 403) return 'check the API key the server expects';
      if (status === 404) return `check that the base URL ends where the API starts (often /v1) and that the server has the model "${options.model}"`;
      if (status === 400) return `check that "${options.model}" is an embedding model the server serves`;
      return genericStatusHint(status);
    },
  });
}

/**
 * The OpenAI embeddings API through the AI SDK's OpenAI provider, model id
 * `openai:<model>`. Throws `embedder_key_missing` at once when `apiKey` is
 * undefined or empty, so a missing key shows at start and not at the first
 * fact.
 */
export function createOpenAIEmbedder(options: OpenAIEmbedderOptions): Embedder {
  if (options.apiKey === undefined || options.apiKey === '') {
    throw new EmbedderError(
      'embedder_key_missing',
      `The OpenAI embedder openai:${options.model} needs an API key: set OPENAI_API_KEY (the apiKey option), or use ROSTER_EMBEDDER=hashing or ollama:<model>.`,
    );
  }
  const baseUrl = checkBaseUrl(options.baseUrl ?? defaultOpenAIBaseUrl, 'OpenAI embedder (OPENAI_BASE_URL)');
  const dimensions = checkDimensions(options.dimensions);
  const provider = createOpenAI({
    apiKey: options.apiKey,
    baseURL: baseUrl,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  return new AiSdkEmbedder({
    ...commonSettings(options),
    id: `openai:${options.model}`,
    local: false,
    dimensions: dimensions ?? 0,
    model: provider.embedding(options.model),
    ...(dimensions === undefined ? {} : { providerOptions: { openai: { dimensions } } }),
    url: `${baseUrl}/embeddings`,
    secret: options.apiKey,
    label: 'OpenAI',
    unreachableHint: 'check the network, or set OPENAI_BASE_URL',
    statusHint: (status) => {
      if (status === 401 || status === 403) return 'check OPENAI_API_KEY';
      if (status === 404) return `check the model name "${options.model}" in ROSTER_EMBEDDER`;
      if (status === 400) return `check the model name "${options.model}" and the dimensions it is asked for`;
      if (status === 429) return 'the rate limit or the quota is reached; try again later, or check the billing of the key';
      return genericStatusHint(status);
    },
  });
}

/**
 * Ollama's embedding endpoint (POST `<baseUrl>/api/embed`) through the
 * `ollama-ai-provider-v2` AI SDK provider. Model id `ollama:<model>`. Local
 * only when Ollama listens on a loopback address (`isLoopbackUrl`): an Ollama
 * on another host gets the text over the network, which PRIVACY=strict
 * forbids.
 */
export function createOllamaEmbedder(options: OllamaEmbedderOptions): Embedder {
  const baseUrl = checkBaseUrl(options.baseUrl ?? defaultOllamaUrl, 'Ollama embedder (OLLAMA_URL)');
  const provider = createOllama({
    baseURL: `${baseUrl}/api`,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  return new AiSdkEmbedder({
    ...commonSettings(options),
    id: `ollama:${options.model}`,
    local: isLoopbackUrl(baseUrl),
    dimensions: 0,
    model: provider.embedding(options.model),
    url: `${baseUrl}/api/embed`,
    secret: undefined,
    label: 'Ollama',
    unreachableHint: 'start Ollama (ollama serve) or set OLLAMA_URL',
    statusHint: (status) => {
      if (status === 404) return `pull the model first: ollama pull ${options.model}`;
      if (status === 400) return `check that "${options.model}" is an embedding model`;
      if (status === 401 || status === 403) return 'check the proxy in front of Ollama, or set OLLAMA_URL';
      return genericStatusHint(status);
    },
  });
}

/**
 * The embedder a reference names (ROSTER_EMBEDDER): `hashing`,
 * `hashing-<dimensions>`, `ollama:<model>`, `openai:<model>` or
 * `openai-compatible:<base-url>#<model>`. The OpenAI key goes only to
 * `openai:`; an `openai-compatible:` server gets no key from here, so that a
 * third-party server never sees the OpenAI one. Throws `embedder_unknown` for
 * anything else, and `embedder_key_missing` for `openai:` without a key.
 */
export function parseEmbedderReference(reference: string, keys: EmbedderKeys = {}): Embedder {
  const trimmed = reference.trim();
  if (trimmed === 'hashing') return createHashingEmbedder();
  const hashing = /^hashing-(\d+)$/.exec(trimmed);
  if (hashing) return createHashingEmbedder({ dimensions: Number(hashing[1]) });
  const prefixed = /^(ollama|openai|openai-compatible):(.+)$/s.exec(trimmed);
  const kind = prefixed?.[1];
  const rest = prefixed?.[2]?.trim() ?? '';
  if (kind === 'ollama' && rest !== '') {
    return createOllamaEmbedder({ model: rest, baseUrl: keys.ollamaUrl ?? defaultOllamaUrl });
  }
  if (kind === 'openai' && rest !== '') {
    return createOpenAIEmbedder({ model: rest, apiKey: keys.openaiApiKey, baseUrl: keys.openaiBaseUrl ?? defaultOpenAIBaseUrl });
  }
  if (kind === 'openai-compatible') {
    const hash = rest.indexOf('#');
    const baseUrl = hash === -1 ? '' : rest.slice(0, hash).trim();
    const model = hash === -1 ? '' : rest.slice(hash + 1).trim();
    if (/^https?:\/\/\S+$/.test(baseUrl) && model !== '') return createOpenAICompatibleEmbedder({ baseUrl, model });
  }
  throw new RosterError(
    'embedder_unknown',
    `Unknown embedder "${trimmed}": use hashing, hashing-<dimensions>, ollama:<model>, openai:<model> or openai-compatible:<base-url>#<model> (e.g. ROSTER_EMBEDDER=ollama:nomic-embed-text).`,
  );
}

/** Everything an `AiSdkEmbedder` needs: the SDK model, its limits, and what to tell people when it fails. */
interface AiSdkEmbedderSettings {
  id: string;
  local: boolean;
  /** Known length, or 0 to learn it from the first answer. */
  dimensions: number;
  model: Exclude<EmbeddingModel, string>;
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
function commonSettings(options: { timeoutMs?: number; maxBatch?: number; maxRetries?: number }): Pick<
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
class AiSdkEmbedder implements Embedder {
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
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = callerSignal === undefined ? timeout : AbortSignal.any([callerSignal, timeout]);

    let embeddings: number[][];
    try {
      ({ embeddings } = await embedMany({
        model: this.#settings.model,
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
      throw this.#failure(error);
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
  #failure(error: unknown): EmbedderError {
    const { label, url } = this.#settings;
    const last = RetryError.isInstance(error) ? error.lastError : error;
    if (!APICallError.isInstance(last)) {
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

function genericStatusHint(status: number): string {
  if (status === 408 || status === 429) return 'the server is busy; try again later';
  if (status >= 500) return 'the server failed; try again later, or check its logs';
  return 'check the model name and the server address in ROSTER_EMBEDDER';
}

/** `baseUrl` without trailing slashes, after checking it is an http(s) URL without credentials. */
function checkBaseUrl(baseUrl: string, what: string): string {
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

function checkDimensions(dimensions: number | undefined): number | undefined {
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
