import { afterEach, describe, expect, it } from 'vitest';
import { EmbedderError } from '@roster/errors';
import {
  createOllamaEmbedder,
  createOpenAIEmbedder,
} from './ai-sdk-embedders.js';
import {
  closedBaseUrl,
  closeFarSides,
  inputsOf,
  ollamaAnswer,
  openAIAnswer,
  rawVector,
  rejectionOf,
  retryNow,
  sendJson,
  startFarSide,
  unit,
} from '../embedding-far-side.js';

const apiKey = 'sk-test-0123456789-secret';
const texts = ['a', 'bb', 'ccc', 'dddd', 'eeeee'];

afterEach(closeFarSides);

describe('createOpenAIEmbedder', () => {
  it('sends the key to the OpenAI base URL and names itself openai:<model>', async () => {
    const farSide = await startFarSide(openAIAnswer);
    const embedder = createOpenAIEmbedder({ model: 'text-embedding-3-small', apiKey, baseUrl: `${farSide.baseUrl}/v1` });
    expect(embedder.model).toBe('openai:text-embedding-3-small');
    expect(embedder.local).toBe(false);
    expect(await embedder.embed(['a', 'bb'])).toHaveLength(2);
    expect(farSide.requests[0]!.path).toBe('/v1/embeddings');
    expect(farSide.requests[0]!.headers.authorization).toBe(`Bearer ${apiKey}`);
  });

  it('turns a 401 into a final error, not retried, that never shows the key, even when the server echoes it', async () => {
    const farSide = await startFarSide((request, response) =>
      sendJson(response, 401, {
        error: { message: `Incorrect API key provided: ${String(request.headers.authorization).slice(7)}.`, code: 'invalid_api_key' },
      }),
    );
    const embedder = createOpenAIEmbedder({ model: 'text-embedding-3-small', apiKey, baseUrl: farSide.baseUrl });
    const error = await rejectionOf(embedder.embed(['a']));
    expect(farSide.requests).toHaveLength(1);
    expect(farSide.requests[0]!.headers.authorization).toBe(`Bearer ${apiKey}`);
    expect(error.code).toBe('embedder_http_401');
    expect(error.status).toBe(401);
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('Incorrect API key provided');
    expect(error.message).toContain('OPENAI_API_KEY');
    expect(error.message).not.toContain(apiKey);
    expect(JSON.stringify(error)).not.toContain(apiKey);
  });

  it('throws embedder_key_missing naming OPENAI_API_KEY when there is no key', () => {
    for (const missing of [undefined, '']) {
      let caught: unknown;
      try {
        createOpenAIEmbedder({ model: 'text-embedding-3-small', apiKey: missing });
      } catch (error) {
        caught = error;
      }
      expect(EmbedderError.isInstance(caught)).toBe(true);
      const error = caught as EmbedderError;
      expect(error.code).toBe('embedder_key_missing');
      expect(error.retryable).toBe(false);
      expect(error.message).toContain('OPENAI_API_KEY');
      expect(error.message).toContain('apiKey');
    }
  });
});

describe('createOllamaEmbedder', () => {
  it('posts to /api/embed in batches and returns normalised vectors in order', async () => {
    const farSide = await startFarSide(ollamaAnswer);
    const embedder = createOllamaEmbedder({ baseUrl: farSide.baseUrl, model: 'nomic-embed-text', maxBatch: 2 });
    expect(embedder.model).toBe('ollama:nomic-embed-text');
    expect(embedder.local).toBe(true);

    const vectors = await embedder.embed(texts);

    vectors.forEach((vector, index) => {
      const expected = unit(rawVector(texts[index]!));
      vector.forEach((value, position) => expect(value).toBeCloseTo(expected[position]!, 12));
    });
    expect(embedder.dimensions).toBe(3);
    expect(farSide.requests.map((request) => [request.path, request.body])).toEqual([
      ['/api/embed', { model: 'nomic-embed-text', input: ['a', 'bb'] }],
      ['/api/embed', { model: 'nomic-embed-text', input: ['ccc', 'dddd'] }],
      ['/api/embed', { model: 'nomic-embed-text', input: ['eeeee'] }],
    ]);
  });

  it('is local only on a loopback address', () => {
    for (const baseUrl of ['http://127.0.0.1:11434', 'http://localhost:11434', 'http://[::1]:11434', 'http://127.1.2.3']) {
      expect(createOllamaEmbedder({ baseUrl, model: 'm' }).local).toBe(true);
    }
    for (const baseUrl of ['http://gpu-box:11434', 'http://10.0.0.5:11434', 'https://ollama.example.com']) {
      expect(createOllamaEmbedder({ baseUrl, model: 'm' }).local).toBe(false);
    }
  });

  it('says to pull a model Ollama does not have', async () => {
    const farSide = await startFarSide((_, response) =>
      sendJson(response, 404, { error: 'model "nomic-embed-text" not found, try pulling it first' }),
    );
    const embedder = createOllamaEmbedder({ baseUrl: farSide.baseUrl, model: 'nomic-embed-text' });
    const error = await rejectionOf(embedder.embed(['a']));
    expect(error.code).toBe('embedder_http_404');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('ollama pull nomic-embed-text');
  });

  it('says to start Ollama or set OLLAMA_URL when nothing listens', async () => {
    const baseUrl = await closedBaseUrl();
    const error = await rejectionOf(createOllamaEmbedder({ baseUrl, model: 'nomic-embed-text', maxRetries: 0 }).embed(['a']));
    expect(error.code).toBe('embedder_unreachable');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain(`${baseUrl}/api/embed`);
    expect(error.message).toContain('start Ollama');
    expect(error.message).toContain('OLLAMA_URL');
  });

  it('rejects an answer without embeddings', async () => {
    const farSide = await startFarSide((_, response) => sendJson(response, 200, { embedding: [1, 2, 3] }));
    const error = await rejectionOf(createOllamaEmbedder({ baseUrl: farSide.baseUrl, model: 'm' }).embed(['a']));
    expect(error.code).toBe('embedder_bad_response');
    expect(error.retryable).toBe(false);
    expect(farSide.requests).toHaveLength(1);
  });

  it('retries a 503 while the model loads, and marks one that outlasts the retries retryable', async () => {
    let failures = 1;
    const farSide = await startFarSide((request, response) => {
      if (failures-- > 0) sendJson(response, 503, { error: 'server busy, please try again' }, retryNow);
      else ollamaAnswer(request, response);
    });
    const embedder = createOllamaEmbedder({ baseUrl: farSide.baseUrl, model: 'nomic-embed-text' });
    expect(await embedder.embed(['a'])).toHaveLength(1);
    expect(farSide.requests).toHaveLength(2);

    failures = 10;
    const error = await rejectionOf(createOllamaEmbedder({ baseUrl: farSide.baseUrl, model: 'nomic-embed-text', maxRetries: 1 }).embed(['a']));
    expect(error.code).toBe('embedder_http_503');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('server busy');
    expect(farSide.requests).toHaveLength(4);
  });

  it('refuses a model that answers vectors of another length than before', async () => {
    let length = 3;
    const farSide = await startFarSide((request, response) =>
      sendJson(response, 200, {
        model: 'm',
        embeddings: inputsOf(request).map(() => new Array<number>(length).fill(1)),
        total_duration: 1,
        load_duration: 1,
        prompt_eval_count: 1,
      }),
    );
    const embedder = createOllamaEmbedder({ baseUrl: farSide.baseUrl, model: 'm' });
    expect(await embedder.embed(['a'])).toHaveLength(1);
    expect(embedder.dimensions).toBe(3);
    length = 5;
    const error = await rejectionOf(embedder.embed(['a']));
    expect(error.code).toBe('embedder_bad_response');
    expect(error.message).toContain('5 dimensions');
    expect(embedder.dimensions).toBe(3);
  });
});
