import { isLoopbackUrl, redactUrl, type Config } from '@roster/config';
import { RosterError } from '@roster/errors';

/** What a model reference needs from the environment to be checked. */
export type ModelCheckConfig = Pick<Config, 'PRIVACY' | 'OPENAI_API_KEY' | 'ANTHROPIC_API_KEY' | 'OLLAMA_URL'>;

/** Whether a model can be used as configured, and what to do when not. */
export interface ModelCheck {
  status: 'ok' | 'fail';
  detail: string;
}

/**
 * An engine or embedder reference (`offline`, `hashing`, `openai:…`,
 * `anthropic:…`, `ollama:…`, `openai-compatible:…`), checked for what it
 * needs: a key, or a server that answers. It calls no model. `doctor` and
 * the server's engine list both ask here.
 */
export async function checkModelReference(reference: string, config: ModelCheckConfig): Promise<ModelCheck> {
  const [provider, rest = ''] = splitOnce(reference, ':');
  const ollamaUrl = config.OLLAMA_URL ?? 'http://127.0.0.1:11434';
  const local =
    provider === 'offline' ||
    provider === 'hashing' ||
    (provider === 'ollama' && isLoopbackUrl(ollamaUrl)) ||
    (provider === 'openai-compatible' && isLoopbackUrl(splitOnce(rest, '#')[0] ?? ''));
  if (config.PRIVACY === 'strict' && !local) {
    return { status: 'fail', detail: `${reference} sends memory off this machine, which PRIVACY=strict forbids: use a local one` };
  }
  switch (provider) {
    case 'offline':
      return { status: 'ok', detail: 'offline (a rule engine, not a language model; no key needed)' };
    case 'hashing':
      return { status: 'ok', detail: 'hashing (local feature hashing; no model needed)' };
    case 'openai':
      return config.OPENAI_API_KEY === undefined ? { status: 'fail', detail: `${reference} needs OPENAI_API_KEY` } : { status: 'ok', detail: `${reference} (key set)` };
    case 'anthropic':
      return config.ANTHROPIC_API_KEY === undefined ? { status: 'fail', detail: `${reference} needs ANTHROPIC_API_KEY` } : { status: 'ok', detail: `${reference} (key set)` };
    case 'ollama':
      return reachable(reference, `${ollamaUrl.replace(/\/+$/, '')}/api/tags`);
    case 'openai-compatible': {
      const [baseUrl = ''] = splitOnce(rest, '#');
      return reachable(reference, `${baseUrl.replace(/\/$/, '')}/models`);
    }
    default:
      throw new RosterError('engine_unknown', `Unknown engine or embedder ${reference}.`);
  }
}

async function reachable(reference: string, url: string): Promise<ModelCheck> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return { status: 'ok', detail: `${reference} (answered ${response.status})` };
  } catch (error) {
    return { status: 'fail', detail: `${reference}: ${redactUrl(url)} does not answer (${(error as Error).message})` };
  }
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const index = text.indexOf(separator);
  return index === -1 ? [text, undefined] : [text.slice(0, index), text.slice(index + 1)];
}
