import { isLoopbackUrl } from '@roster/config';
import type { Embedder } from '@roster/contracts';
import { EmbedderError } from '@roster/errors';
import { loadOnce } from '../lazy.js';
import { AiSdkEmbedder, checkBaseUrl, checkDimensions, commonSettings, genericStatusHint } from './ai-sdk-embedder.js';

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

const defaultOpenAIBaseUrl = 'https://api.openai.com/v1';
const defaultOllamaUrl = 'http://127.0.0.1:11434';
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
  // The provider's client is loaded by the first batch, as an engine's by its first turn (see `createAiSdkEngine`).
  const model = loadOnce(async () => {
    const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
    const provider = createOpenAICompatible({
      name: 'openai-compatible',
      baseURL: baseUrl,
      ...(apiKey === undefined ? {} : { apiKey }),
      ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    });
    return provider.embeddingModel(options.model);
  });
  return new AiSdkEmbedder({
    ...commonSettings(options),
    id: `openai-compatible:${baseUrl}#${options.model}`,
    local: false,
    dimensions: dimensions ?? 0,
    model,
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
  const apiKey = options.apiKey;
  const model = loadOnce(async () => {
    const { createOpenAI } = await import('@ai-sdk/openai');
    return createOpenAI({ apiKey, baseURL: baseUrl, ...(options.fetch === undefined ? {} : { fetch: options.fetch }) }).embedding(options.model);
  });
  return new AiSdkEmbedder({
    ...commonSettings(options),
    id: `openai:${options.model}`,
    local: false,
    dimensions: dimensions ?? 0,
    model,
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
  const model = loadOnce(async () => {
    const { createOllama } = await import('ollama-ai-provider-v2');
    return createOllama({ baseURL: `${baseUrl}/api`, ...(options.fetch === undefined ? {} : { fetch: options.fetch }) }).embedding(options.model);
  });
  return new AiSdkEmbedder({
    ...commonSettings(options),
    id: `ollama:${options.model}`,
    local: isLoopbackUrl(baseUrl),
    dimensions: 0,
    model,
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
