import { afterEach, describe, expect, it } from 'vitest';
import { RosterError } from '@roster/errors';
import { createOpenAICompatibleEmbedder } from './ai-sdk-embedders.js';
import {
  closedBaseUrl,
  closeFarSides,
  inputsOf,
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
