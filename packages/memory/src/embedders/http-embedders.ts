import { RosterError } from '@roster/errors';
import { EmbedderError, isRetryableStatus, normalizeVector, type Embedder, type EmbedOptions } from './embedder.js';
import { createHashingEmbedder } from './hashing-embedder.js';

/** The `fetch` an HTTP embedder calls; Node's global one unless a test or proxy supplies another. */
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
  /** How long one request may take, in milliseconds; 30000 by default. */
  timeoutMs?: number;
  /** At most this many texts per request; 64 by default. */
  maxBatch?: number;
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
  /** How long one request may take, in milliseconds; 30000 by default (a cold model takes a while to load). */
  timeoutMs?: number;
  /** At most this many texts per request; 64 by default. */
  maxBatch?: number;
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
const excerptLength = 200;

/**
 * An embedder for any server that speaks the OpenAI embeddings API (LM
 * Studio, vLLM, llama.cpp, LiteLLM, OpenAI itself): POST
 * `<baseUrl>/embeddings` with `{ model, input }`, in batches of `maxBatch`,
 * one batch after the other.
 *
 * `dimensions` is the configured value, or 0 until the first answer teaches
 * it; from then on every answer must have that length. Model id:
 * `openai-compatible:<baseUrl>#<model>`. Not local: the server may be
 * anywhere, and may forward the text further.
 */
export function createOpenAICompatibleEmbedder(options: OpenAICompatibleEmbedderOptions): Embedder {
  const baseUrl = checkBaseUrl(options.baseUrl, 'openai-compatible embedder');
  return createOpenAIProtocolEmbedder(options, baseUrl, {
    id: `openai-compatible:${baseUrl}#${options.model}`,
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
 * The OpenAI embeddings API, model id `openai:<model>`. Throws
 * `embedder_key_missing` at once when `apiKey` is undefined or empty, so a
 * missing key shows at start and not at the first fact.
 */
export function createOpenAIEmbedder(options: OpenAIEmbedderOptions): Embedder {
  if (options.apiKey === undefined || options.apiKey === '') {
    throw new EmbedderError(
      'embedder_key_missing',
      `The OpenAI embedder openai:${options.model} needs an API key: set OPENAI_API_KEY (the apiKey option), or use ROSTER_EMBEDDER=hashing or ollama:<model>.`,
    );
  }
  const baseUrl = checkBaseUrl(options.baseUrl ?? defaultOpenAIBaseUrl, 'OpenAI embedder (OPENAI_BASE_URL)');
  return createOpenAIProtocolEmbedder({ ...options, apiKey: options.apiKey }, baseUrl, {
    id: `openai:${options.model}`,
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
 * Ollama's embedding endpoint: POST `<baseUrl>/api/embed` with
 * `{ model, input }`, answered by `{ embeddings }`. Model id `ollama:<model>`.
 * Local only when Ollama listens on a loopback address (127.x, localhost,
 * ::1): an Ollama on another host gets the text over the network.
 */
export function createOllamaEmbedder(options: OllamaEmbedderOptions): Embedder {
  const baseUrl = checkBaseUrl(options.baseUrl ?? defaultOllamaUrl, 'Ollama embedder (OLLAMA_URL)');
  const url = `${baseUrl}/api/embed`;
  return new HttpEmbedder({
    id: `ollama:${options.model}`,
    local: isLoopbackUrl(baseUrl),
    dimensions: 0,
    timeoutMs: checkPositiveInteger(options.timeoutMs ?? defaultTimeoutMs, 'timeoutMs'),
    maxBatch: checkPositiveInteger(options.maxBatch ?? defaultMaxBatch, 'maxBatch'),
    fetch: options.fetch ?? globalThis.fetch,
    url,
    headers: {},
    secret: undefined,
    body: (texts) => ({ model: options.model, input: texts }),
    parse: parseOllamaAnswer,
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

/** Whether `url` points at this machine: 127.0.0.0/8, localhost or ::1. */
function isLoopbackUrl(url: string): boolean {
  const host = new URL(url).hostname.toLowerCase();
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** What differs between the OpenAI-protocol embedders. */
interface OpenAIProtocolProfile {
  id: string;
  label: string;
  unreachableHint: string;
  statusHint: (status: number) => string;
}

function createOpenAIProtocolEmbedder(
  options: Omit<OpenAICompatibleEmbedderOptions, 'baseUrl'>,
  baseUrl: string,
  profile: OpenAIProtocolProfile,
): Embedder {
  const dimensions = options.dimensions;
  if (dimensions !== undefined) checkPositiveInteger(dimensions, 'dimensions');
  const headers: Record<string, string> = {};
  if (options.apiKey !== undefined && options.apiKey !== '') headers.authorization = `Bearer ${options.apiKey}`;
  return new HttpEmbedder({
    ...profile,
    local: false,
    dimensions: dimensions ?? 0,
    timeoutMs: checkPositiveInteger(options.timeoutMs ?? defaultTimeoutMs, 'timeoutMs'),
    maxBatch: checkPositiveInteger(options.maxBatch ?? defaultMaxBatch, 'maxBatch'),
    fetch: options.fetch ?? globalThis.fetch,
    url: `${baseUrl}/embeddings`,
    headers,
    secret: options.apiKey,
    body: (texts) =>
      dimensions === undefined ? { model: options.model, input: texts } : { model: options.model, input: texts, dimensions },
    parse: parseOpenAIAnswer,
  });
}

/** Everything an `HttpEmbedder` needs: where to send, what to send, how to read the answer, what to tell people. */
interface HttpEmbedderSettings {
  id: string;
  local: boolean;
  /** Known length, or 0 to learn it from the first answer. */
  dimensions: number;
  timeoutMs: number;
  maxBatch: number;
  fetch: FetchFunction;
  url: string;
  headers: Record<string, string>;
  /** Scrubbed from every excerpt put in a message. */
  secret: string | undefined;
  body: (texts: readonly string[]) => unknown;
  /** The vectors in input order, or a description of what is wrong with the answer. */
  parse: (answer: unknown, count: number) => number[][] | string;
  label: string;
  unreachableHint: string;
  statusHint: (status: number) => string;
}

class HttpEmbedder implements Embedder {
  readonly model: string;
  readonly local: boolean;
  #dimensions: number;
  readonly #settings: HttpEmbedderSettings;

  constructor(settings: HttpEmbedderSettings) {
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
      vectors.push(...(await this.#embedBatch(texts.slice(start, start + this.#settings.maxBatch), options.signal)));
    }
    return vectors;
  }

  async #embedBatch(texts: readonly string[], callerSignal: AbortSignal | undefined): Promise<number[][]> {
    const { url, label, timeoutMs } = this.#settings;
    callerSignal?.throwIfAborted();
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = callerSignal === undefined ? timeout : AbortSignal.any([callerSignal, timeout]);

    let status: number;
    let text: string;
    try {
      const response = await this.#settings.fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...this.#settings.headers },
        body: JSON.stringify(this.#settings.body(texts)),
        signal,
      });
      status = response.status;
      text = await response.text();
    } catch (error) {
      if (callerSignal?.aborted) throw callerSignal.reason;
      if (timeout.aborted) {
        throw new EmbedderError(
          'embedder_timeout',
          `${label} did not answer within ${timeoutMs} ms at ${url}: it may be overloaded or still loading the model; try again, or ${this.#settings.unreachableHint}.`,
          { cause: error, retryable: true },
        );
      }
      throw new EmbedderError(
        'embedder_unreachable',
        `${label} is not reachable at ${url} (${this.#scrub(networkReason(error))}): ${this.#settings.unreachableHint}.`,
        { cause: error, retryable: true },
      );
    }

    if (status < 200 || status > 299) {
      const excerpt = this.#excerpt(text);
      throw new EmbedderError(
        `embedder_http_${status}`,
        `${label} answered HTTP ${status} at ${url}${excerpt === '' ? '' : ` (${excerpt})`}: ${this.#settings.statusHint(status)}.`,
        { status, retryable: isRetryableStatus(status) },
      );
    }

    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      throw this.#badResponse(`an answer that is not JSON (${this.#excerpt(text) || 'empty'})`, status);
    }
    const parsed = this.#settings.parse(answer, texts.length);
    if (typeof parsed === 'string') throw this.#badResponse(parsed, status);

    const normalized: number[][] = [];
    for (const [index, vector] of parsed.entries()) {
      const expected = this.#dimensions === 0 ? parsed[0]?.length ?? 0 : this.#dimensions;
      if (vector.length === 0 || vector.length !== expected) {
        throw this.#badResponse(`a vector of ${vector.length} dimensions for input ${index}, expected ${expected}`, status);
      }
      const unit = normalizeVector(vector);
      if (unit === undefined) throw this.#badResponse(`a zero or non-finite vector for input ${index}`, status);
      normalized.push(unit);
    }
    if (this.#dimensions === 0 && normalized[0] !== undefined) this.#dimensions = normalized[0].length;
    return normalized;
  }

  #badResponse(what: string, status: number): EmbedderError {
    return new EmbedderError(
      'embedder_bad_response',
      `${this.#settings.label} at ${this.#settings.url} sent ${what}: check that the address serves the ${this.model} embeddings API.`,
      { status, retryable: false },
    );
  }

  /** A short, single-line, key-free excerpt of a response body. */
  #excerpt(text: string): string {
    const line = this.#scrub(text).replace(/\s+/g, ' ').trim();
    return line.length > excerptLength ? `${line.slice(0, excerptLength)}…` : line;
  }

  /** `text` without the API key, should a server echo it back. */
  #scrub(text: string): string {
    const secret = this.#settings.secret;
    return secret === undefined || secret === '' ? text : text.split(secret).join('[redacted]');
  }
}

function parseOpenAIAnswer(answer: unknown, count: number): number[][] | string {
  if (!isRecord(answer) || !Array.isArray(answer.data)) return 'an answer without a "data" array';
  if (answer.data.length !== count) return `${answer.data.length} embeddings for ${count} inputs`;
  const vectors: (number[] | undefined)[] = new Array<number[] | undefined>(count).fill(undefined);
  for (const [position, item] of (answer.data as unknown[]).entries()) {
    if (!isRecord(item)) return `data[${position}] that is not an object`;
    // Servers that leave out "index" answer in input order.
    const index = item.index ?? position;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= count) {
      return `data[${position}] with index ${JSON.stringify(index)} outside 0..${count - 1}`;
    }
    if (vectors[index] !== undefined) return `index ${index} twice`;
    if (!isNumberArray(item.embedding)) return `data[${position}].embedding that is not an array of numbers`;
    vectors[index] = item.embedding;
  }
  return vectors as number[][];
}

function parseOllamaAnswer(answer: unknown, count: number): number[][] | string {
  if (!isRecord(answer) || !Array.isArray(answer.embeddings)) return 'an answer without an "embeddings" array';
  const embeddings = answer.embeddings as unknown[];
  if (embeddings.length !== count) return `${embeddings.length} embeddings for ${count} inputs`;
  const vectors: number[][] = [];
  for (const [index, embedding] of embeddings.entries()) {
    if (!isNumberArray(embedding)) return `embeddings[${index}] that is not an array of numbers`;
    vectors.push(embedding);
  }
  return vectors;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNumberArray(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'number');
}

/** The most telling part of a fetch failure: undici hides `ECONNREFUSED …` in the cause of "fetch failed". */
function networkReason(error: unknown): string {
  if (error instanceof Error) {
    const cause: unknown = error.cause;
    if (cause instanceof Error && cause.message !== '') return cause.message;
    if (typeof cause === 'object' && cause !== null && 'code' in cause) return String(cause.code);
    return error.message;
  }
  return String(error);
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

function checkPositiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new EmbedderError('embedder_options_invalid', `The embedder option ${name} must be a positive integer, got ${String(value)}.`);
  }
  return value;
}
