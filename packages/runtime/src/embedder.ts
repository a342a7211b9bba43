import type { Embedder } from '@roster/contracts';
import { createOllamaEmbedder, createOpenAICompatibleEmbedder, createOpenAIEmbedder } from '@roster/engines';
import { RosterError } from '@roster/errors';
import { createHashingEmbedder } from '@roster/memory';

/** The keys and addresses `parseEmbedderReference` may need, taken from the parsed configuration. */
export interface EmbedderKeys {
  /** OPENAI_API_KEY; only ever sent to the OpenAI base URL, never to an `openai-compatible:` server. */
  openaiApiKey?: string;
  /** OPENAI_BASE_URL. */
  openaiBaseUrl?: string;
  /** OLLAMA_URL. */
  ollamaUrl?: string;
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
    return createOllamaEmbedder({ model: rest, ...(keys.ollamaUrl === undefined ? {} : { baseUrl: keys.ollamaUrl }) });
  }
  if (kind === 'openai' && rest !== '') {
    return createOpenAIEmbedder({ model: rest, apiKey: keys.openaiApiKey, ...(keys.openaiBaseUrl === undefined ? {} : { baseUrl: keys.openaiBaseUrl }) });
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

