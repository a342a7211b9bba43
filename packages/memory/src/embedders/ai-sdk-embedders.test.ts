import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RosterError } from '@roster/errors';
import { EmbedderError } from './embedder.js';
import {
  createOllamaEmbedder,
  createOpenAICompatibleEmbedder,
  createOpenAIEmbedder,
  parseEmbedderReference,
} from './ai-sdk-embedders.js';

const apiKey = 'sk-test-0123456789-secret';

interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

type Answer = (request: ReceivedRequest, response: ServerResponse) => void;

interface FarSide {
  baseUrl: string;
  requests: ReceivedRequest[];
}

const servers: http.Server[] = [];

/** A real HTTP server on 127.0.0.1 that plays the embeddings provider; the embedders reach it through the AI SDK's own clients. */
async function startFarSide(answer: Answer): Promise<FarSide> {
  const requests: ReceivedRequest[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const received: ReceivedRequest = {
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: text === '' ? undefined : (JSON.parse(text) as unknown),
      };
      requests.push(received);
      answer(received, response);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}`, requests };
}

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** A base URL nobody listens on: a server's port, after the server closed. */
async function closedBaseUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

/** Asks the client to retry at once: the AI SDK honours `retry-after-ms` instead of its two-second backoff. */
const retryNow = { 'retry-after-ms': '1' };

/** The raw (not normalised) vector the far side gives a text: distinct per text, length 3. */
function rawVector(text: string): number[] {
  return [text.length, 2, 1];
}

function unit(vector: readonly number[]): number[] {
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}

function inputsOf(request: ReceivedRequest): string[] {
  return (request.body as { input: string[] }).input;
}

/** Answers like OpenAI's POST /v1/embeddings. */
const openAIAnswer: Answer = (request, response) => {
  const data = inputsOf(request).map((text, index) => ({ object: 'embedding', index, embedding: rawVector(text) }));
  sendJson(response, 200, { object: 'list', data, model: 'text-embedding-test', usage: { prompt_tokens: 1, total_tokens: 1 } });
};

/** Answers like Ollama's POST /api/embed. */
const ollamaAnswer: Answer = (request, response) => {
  sendJson(response, 200, {
    model: 'nomic-embed-text',
    embeddings: inputsOf(request).map(rawVector),
    total_duration: 14_143_917,
    load_duration: 1_019_500,
    prompt_eval_count: inputsOf(request).length,
  });
};

/** The error `promise` rejects with, or a failure when it resolves. */
async function rejectionOf(promise: Promise<unknown>): Promise<EmbedderError> {
  try {
    await promise;
  } catch (error) {
    expect(EmbedderError.isInstance(error)).toBe(true);
    return error as EmbedderError;
  }
  throw new Error('expected the promise to reject');
}

const texts = ['a', 'bb', 'ccc', 'dddd', 'eeeee'];

describe('createOpenAICompatibleEmbedder', () => {
  it('embeds in batches of maxBatch, in input order, normalised, learning the dimensions', async () => {
    const farSide = await startFarSide(openAIAnswer);
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: `${farSide.baseUrl}/v1/`, model: 'text-embedding-test', apiKey, maxBatch: 2 });
    expect(embedder.model).toBe(`openai-compatible:${farSide.baseUrl}/v1#text-embedding-test`);
    expect(embedder.local).toBe(false);
    expect(embedder.dimensions).toBe(0);

    const vectors = await embedder.embed(texts);

    expect(vectors).toHaveLength(5);
    vectors.forEach((vector, index) => {
      const expected = unit(rawVector(texts[index]!));
      vector.forEach((value, position) => expect(value).toBeCloseTo(expected[position]!, 12));
    });
    expect(embedder.dimensions).toBe(3);
    expect(farSide.requests.map((request) => request.path)).toEqual(['/v1/embeddings', '/v1/embeddings', '/v1/embeddings']);
    expect(farSide.requests.map((request) => request.method)).toEqual(['POST', 'POST', 'POST']);
    expect(farSide.requests.map((request) => request.body)).toEqual([
      { model: 'text-embedding-test', input: ['a', 'bb'], encoding_format: 'float' },
      { model: 'text-embedding-test', input: ['ccc', 'dddd'], encoding_format: 'float' },
      { model: 'text-embedding-test', input: ['eeeee'], encoding_format: 'float' },
    ]);
    for (const request of farSide.requests) {
      expect(request.headers.authorization).toBe(`Bearer ${apiKey}`);
      expect(request.headers['content-type']).toBe('application/json');
    }
  });

  it('sends no Authorization header without a key, and no request for no texts', async () => {
    const farSide = await startFarSide(openAIAnswer);
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: farSide.baseUrl, model: 'm' });
    expect(await embedder.embed([])).toEqual([]);
    expect(farSide.requests).toHaveLength(0);
    expect(await embedder.embed(['a'])).toHaveLength(1);
    expect(farSide.requests).toHaveLength(1);
    expect(farSide.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('asks for the configured dimensions and rejects an answer of another length', async () => {
    const farSide = await startFarSide(openAIAnswer);
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: farSide.baseUrl, model: 'm', dimensions: 8 });
    expect(embedder.dimensions).toBe(8);
    const error = await rejectionOf(embedder.embed(['a']));
    expect(farSide.requests[0]!.body).toEqual({ model: 'm', input: ['a'], encoding_format: 'float', dimensions: 8 });
    expect(error.code).toBe('embedder_bad_response');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('3 dimensions');
  });

  it('rejects an answer whose length changes after the dimensions were learned', async () => {
    let length = 3;
    const farSide = await startFarSide((request, response) => {
      sendJson(response, 200, { data: inputsOf(request).map((_, index) => ({ index, embedding: new Array<number>(length).fill(1) })) });
    });
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: farSide.baseUrl, model: 'm' });
    expect(await embedder.embed(['a'])).toHaveLength(1);
    length = 4;
    const error = await rejectionOf(embedder.embed(['a']));
    expect(error.code).toBe('embedder_bad_response');
    expect(embedder.dimensions).toBe(3);
  });

  it('retries a 429 and answers once the server does', async () => {
    let limited = 1;
    const farSide = await startFarSide((request, response) => {
      if (limited-- > 0) sendJson(response, 429, { error: { message: 'Rate limit reached', type: 'requests' } }, retryNow);
      else openAIAnswer(request, response);
    });
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: farSide.baseUrl, model: 'm', apiKey });
    const vectors = await embedder.embed(['a', 'bb']);
    expect(vectors).toHaveLength(2);
    expect(vectors[1]!.map((value) => Number(value.toFixed(6)))).toEqual(unit(rawVector('bb')).map((value) => Number(value.toFixed(6))));
    expect(farSide.requests.map((request) => request.body)).toEqual([
      { model: 'm', input: ['a', 'bb'], encoding_format: 'float' },
      { model: 'm', input: ['a', 'bb'], encoding_format: 'float' },
    ]);
  });

  it('retries as many times as one call asks, none when it asks for none', async () => {
    let failures = 0;
    const farSide = await startFarSide((request, response) => {
      if (failures-- > 0) sendJson(response, 503, { error: { message: 'overloaded' } }, retryNow);
      else openAIAnswer(request, response);
    });
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: farSide.baseUrl, model: 'm', maxRetries: 2 });
    failures = 1;
    const error = await rejectionOf(embedder.embed(['a'], { maxRetries: 0 }));
    expect(error.code).toBe('embedder_http_503');
    expect(error.retryable).toBe(true);
    expect(farSide.requests).toHaveLength(1);
    failures = 1;
    expect(await embedder.embed(['a'])).toHaveLength(1);
    expect(farSide.requests).toHaveLength(3);
  });

  it('turns a 429 that outlasts the retries into a retryable EmbedderError', async () => {
    const farSide = await startFarSide((_, response) =>
      sendJson(response, 429, { error: { message: 'Rate limit reached', type: 'requests' } }, retryNow),
    );
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: farSide.baseUrl, model: 'm', apiKey, maxRetries: 2 });
    const error = await rejectionOf(embedder.embed(['a']));
    expect(farSide.requests).toHaveLength(3);
    expect(error).toBeInstanceOf(RosterError);
    expect(error.code).toBe('embedder_http_429');
    expect(error.status).toBe(429);
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('Rate limit reached');
    expect(error.message).toContain(`${farSide.baseUrl}/embeddings`);
  });

  it('turns a 5xx into a retryable EmbedderError and a 400 into a final one, asked once', async () => {
    let status = 503;
    const farSide = await startFarSide((_, response) => sendJson(response, status, { error: { message: 'nope' } }));
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: farSide.baseUrl, model: 'm', maxRetries: 0 });
    const unavailable = await rejectionOf(embedder.embed(['a']));
    expect(unavailable.code).toBe('embedder_http_503');
    expect(unavailable.status).toBe(503);
    expect(unavailable.retryable).toBe(true);
    expect(farSide.requests).toHaveLength(1);
    status = 400;
    const invalid = await rejectionOf(
      createOpenAICompatibleEmbedder({ baseUrl: farSide.baseUrl, model: 'm', maxRetries: 2 }).embed(['a']),
    );
    expect(invalid.code).toBe('embedder_http_400');
    expect(invalid.retryable).toBe(false);
    expect(farSide.requests).toHaveLength(2);
  });

  it('turns malformed JSON into a final embedder_bad_response', async () => {
    const farSide = await startFarSide((_, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"data": [ {"embedding": [1, 2');
    });
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: farSide.baseUrl, model: 'm', apiKey });
    const error = await rejectionOf(embedder.embed(['a']));
    expect(error.code).toBe('embedder_bad_response');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('could not read');
  });

  it('rejects answers with the wrong count, vectors of two lengths, non-numbers or a zero vector, without retrying', async () => {
    const answers: unknown[] = [
      { data: [{ index: 0, embedding: [1, 2] }] },
      { data: [{ index: 0, embedding: [1, 2] }, { index: 1, embedding: [1, 2, 3] }] },
      { data: [{ index: 0, embedding: [1, 2] }, { index: 1, embedding: ['1', 2] }] },
      { data: [{ index: 0, embedding: [1, 2] }, { index: 1, embedding: [0, 0] }] },
      { result: [] },
      // The positive control: the same client takes a well-formed answer.
      { data: [{ index: 0, embedding: [1, 2] }, { index: 1, embedding: [2, 1] }] },
    ];
    let next = 0;
    const farSide = await startFarSide((_, response) => sendJson(response, 200, answers[next++]));
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: farSide.baseUrl, model: 'm' });
    for (const _ of answers.slice(0, -1)) {
      const error = await rejectionOf(embedder.embed(['a', 'b']));
      expect(error.code).toBe('embedder_bad_response');
      expect(error.retryable).toBe(false);
    }
    expect(farSide.requests).toHaveLength(answers.length - 1);
    expect(embedder.dimensions).toBe(0);
    expect(await embedder.embed(['a', 'b'])).toHaveLength(2);
    expect(embedder.dimensions).toBe(2);
  });

  it('turns a refused connection into a retryable embedder_unreachable naming the URL', async () => {
    const baseUrl = await closedBaseUrl();
    const embedder = createOpenAICompatibleEmbedder({ baseUrl, model: 'm', apiKey, maxRetries: 0 });
    const error = await rejectionOf(embedder.embed(['a']));
    expect(error.code).toBe('embedder_unreachable');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain(`${baseUrl}/embeddings`);
    expect(error.message).toContain('ECONNREFUSED');
    expect(error.message).not.toContain(apiKey);
  });

  it('gives up after timeoutMs with a retryable embedder_timeout', async () => {
    const farSide = await startFarSide(() => {
      // Never answers.
    });
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: farSide.baseUrl, model: 'm', timeoutMs: 100 });
    const error = await rejectionOf(embedder.embed(['a']));
    expect(error.code).toBe('embedder_timeout');
    expect(error.retryable).toBe(true);
    expect(farSide.requests).toHaveLength(1);
  });

  it('rejects with the caller’s own reason when the caller aborts', async () => {
    const farSide = await startFarSide(() => {
      // Never answers.
    });
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: farSide.baseUrl, model: 'm' });
    const controller = new AbortController();
    const pending = embedder.embed(['a'], { signal: controller.signal });
    await expect.poll(() => farSide.requests.length).toBe(1);
    const reason = new Error('shutting down');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it('rejects a base URL that carries credentials', () => {
    expect(() => createOpenAICompatibleEmbedder({ baseUrl: 'http://user:hunter2@127.0.0.1:1/v1', model: 'm' })).toThrow(
      expect.objectContaining({ code: 'embedder_options_invalid', message: expect.not.stringContaining('hunter2') }),
    );
  });
});

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

describe('parseEmbedderReference', () => {
  it('builds the hashing embedder, by default with 256 dimensions', () => {
    const embedder = parseEmbedderReference('hashing', {});
    expect([embedder.model, embedder.dimensions, embedder.local]).toEqual(['hashing-256', 256, true]);
    const small = parseEmbedderReference('hashing-64', {});
    expect([small.model, small.dimensions]).toEqual(['hashing-64', 64]);
  });

  it('sends ollama: references to OLLAMA_URL', async () => {
    const farSide = await startFarSide(ollamaAnswer);
    const embedder = parseEmbedderReference('ollama:nomic-embed-text', { ollamaUrl: farSide.baseUrl });
    expect(embedder.model).toBe('ollama:nomic-embed-text');
    expect(await embedder.embed(['a'])).toHaveLength(1);
    expect(farSide.requests.map((request) => request.path)).toEqual(['/api/embed']);
  });

  it('sends openai: references to OPENAI_BASE_URL with OPENAI_API_KEY', async () => {
    const farSide = await startFarSide(openAIAnswer);
    const embedder = parseEmbedderReference('openai:text-embedding-3-small', { openaiApiKey: apiKey, openaiBaseUrl: farSide.baseUrl });
    expect(embedder.model).toBe('openai:text-embedding-3-small');
    expect(await embedder.embed(['a'])).toHaveLength(1);
    expect(farSide.requests[0]!.headers.authorization).toBe(`Bearer ${apiKey}`);
    expect(() => parseEmbedderReference('openai:text-embedding-3-small', {})).toThrow(
      expect.objectContaining({ code: 'embedder_key_missing' }),
    );
  });

  it('sends openai-compatible: references to their own URL, without the OpenAI key', async () => {
    const farSide = await startFarSide(openAIAnswer);
    const embedder = parseEmbedderReference(`openai-compatible:${farSide.baseUrl}/v1#bge-small`, { openaiApiKey: apiKey });
    expect(embedder.model).toBe(`openai-compatible:${farSide.baseUrl}/v1#bge-small`);
    expect(embedder.local).toBe(false);
    expect(await embedder.embed(['a'])).toHaveLength(1);
    expect(farSide.requests[0]!.path).toBe('/v1/embeddings');
    expect(farSide.requests[0]!.body).toEqual({ model: 'bge-small', input: ['a'], encoding_format: 'float' });
    expect(farSide.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('rejects anything else with embedder_unknown listing the accepted forms', () => {
    for (const reference of ['word2vec', 'ollama:', 'openai:', 'openai-compatible:127.0.0.1#m', 'openai-compatible:http://x/v1', 'hashing-']) {
      let caught: unknown;
      try {
        parseEmbedderReference(reference, {});
      } catch (error) {
        caught = error;
      }
      expect(RosterError.isInstance(caught)).toBe(true);
      const error = caught as RosterError;
      expect(error.code).toBe('embedder_unknown');
      for (const form of ['hashing', 'ollama:<model>', 'openai:<model>', 'openai-compatible:<base-url>#<model>']) {
        expect(error.message).toContain(form);
      }
    }
  });
});
