import { isLoopbackUrl } from '@roster/config';
import type { Engine } from '@roster/contracts';
import { RosterError } from '@roster/errors';
import { createAiSdkEngine } from './ai-sdk-engine.js';
import { loadOnce } from './lazy.js';
import { createOfflineEngine } from './offline-engine.js';

/**
 * What an engine reference needs from its caller. Engines never read the
 * environment: the caller parses it once and passes the values here.
 */
export interface EngineReferenceOptions {
  openaiApiKey?: string;
  /** For `openai:`; the OpenAI API when absent. */
  openaiBaseUrl?: string;
  anthropicApiKey?: string;
  /** For `anthropic:`; the Anthropic API when absent. */
  anthropicBaseUrl?: string;
  /**
   * For `openai-compatible:`; most local servers need none. The OpenAI key is
   * never sent there: that server is not OpenAI.
   */
  openaiCompatibleApiKey?: string;
  /** The offline engine introduces itself by it. */
  agentName?: string;
  maxRetries?: number;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const openaiApiUrl = 'https://api.openai.com/v1';
const anthropicApiUrl = 'https://api.anthropic.com/v1';

const forms = ['offline', 'openai:<model>', 'anthropic:<model>', 'openai-compatible:<base-url>#<model>'];

/** Makes the engine an agent's reference names: `offline`, `openai:gpt-4o-mini`, `anthropic:claude-…`, `openai-compatible:http://127.0.0.1:11434/v1#llama3.2`. */
export function createEngine(reference: string, options: EngineReferenceOptions = {}): Engine {
  if (reference === 'offline') return createOfflineEngine({ agentName: options.agentName ?? 'Roster' });

  const colon = reference.indexOf(':');
  const kind = colon === -1 ? reference : reference.slice(0, colon);
  const rest = colon === -1 ? '' : reference.slice(colon + 1);
  const settings = {
    id: reference,
    ...(options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  };
  const fetchOption = options.fetch === undefined ? {} : { fetch: options.fetch };

  switch (kind) {
    case 'openai': {
      const model = modelName(reference, rest);
      const apiKey = requireKey(reference, options.openaiApiKey, 'openaiApiKey', 'OPENAI_API_KEY');
      const load = loadOnce(async () => {
        const { createOpenAI } = await import('@ai-sdk/openai');
        return createOpenAI({ apiKey, baseURL: options.openaiBaseUrl ?? openaiApiUrl, ...fetchOption }).chat(model);
      });
      return createAiSdkEngine({ ...settings, model: load, local: false, accepts: ['image'], secrets: [apiKey] });
    }
    case 'anthropic': {
      const model = modelName(reference, rest);
      const apiKey = requireKey(reference, options.anthropicApiKey, 'anthropicApiKey', 'ANTHROPIC_API_KEY');
      const load = loadOnce(async () => {
        const { createAnthropic } = await import('@ai-sdk/anthropic');
        return createAnthropic({ apiKey, baseURL: options.anthropicBaseUrl ?? anthropicApiUrl, ...fetchOption }).messages(model);
      });
      return createAiSdkEngine({ ...settings, model: load, local: false, accepts: ['image'], secrets: [apiKey] });
    }
    case 'openai-compatible': {
      const hash = rest.lastIndexOf('#');
      const baseURL = hash === -1 ? '' : rest.slice(0, hash);
      const model = hash === -1 ? '' : rest.slice(hash + 1);
      const url = parseUrl(baseURL);
      if (url === undefined || model === '') throw unknownReference(reference);
      if (url.username !== '' || url.password !== '') {
        // fetch refuses such a URL; and the reference, with its password, would be the engine id.
        throw new RosterError(
          'engine_unknown',
          `The openai-compatible base URL for ${url.host} carries credentials: remove them and pass openaiCompatibleApiKey`,
        );
      }
      const apiKey = options.openaiCompatibleApiKey;
      const local = isLoopbackUrl(url);
      // Images travel as OpenAI's image_url parts, which OpenAI-compatible servers with a vision model read.
      const load = loadOnce(async () => {
        const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
        const provider = createOpenAICompatible({
          name: 'openai-compatible',
          baseURL,
          includeUsage: true,
          ...(apiKey === undefined ? {} : { apiKey }),
          ...fetchOption,
        });
        return provider.chatModel(model);
      });
      return createAiSdkEngine({ ...settings, model: load, local, accepts: ['image'], secrets: apiKey === undefined ? [] : [apiKey] });
    }
    default:
      throw unknownReference(reference);
  }
}

function modelName(reference: string, rest: string): string {
  if (rest.trim() === '') throw unknownReference(reference);
  return rest;
}

function requireKey(reference: string, key: string | undefined, option: string, variable: string): string {
  if (key !== undefined && key !== '') return key;
  throw new RosterError('engine_key_missing', `${reference} needs an API key: pass ${option} or set ${variable}`);
}

function unknownReference(reference: string): RosterError {
  return new RosterError(
    'engine_unknown',
    `Unknown engine reference ${JSON.stringify(reference)}: use one of ${forms.join(', ')}`,
  );
}

function parseUrl(value: string): URL | undefined {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}
