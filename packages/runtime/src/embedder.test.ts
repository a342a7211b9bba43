import { startFarSide, closeFarSides, ollamaAnswer, openAIAnswer } from '@roster/engines/testing';
import { RosterError } from '@roster/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { parseEmbedderReference } from './embedder.js';

const apiKey = 'sk-test-0123456789-secret';

afterEach(closeFarSides);

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
