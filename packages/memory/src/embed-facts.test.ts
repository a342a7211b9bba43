import { testInstallationKey } from '@roster/config/testing';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpenAICompatibleEmbedder } from '@roster/engines';
import { createMemory, type Memory } from './memory.js';
import { memoryFixture, saidBy, type MemoryFixture } from './testing/fixture.js';

/**
 * The embed job's race: vectors are computed outside any transaction (the
 * embedder may be a remote model), so a fact can be forgotten meanwhile. The
 * far side is a local server that answers like OpenAI's embeddings API and
 * holds its answer until the test lets it go.
 */
let f: MemoryFixture;
let memory: Memory;
let server: http.Server;
let received: string[][] = [];
let release: () => void = () => {};
let held: Promise<void> = Promise.resolve();

beforeAll(async () => {
  f = await memoryFixture();
  server = http.createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk) => (raw += chunk));
    request.on('end', async () => {
      const body = JSON.parse(raw) as { input: string[] };
      received.push(body.input);
      await held;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          object: 'list',
          data: body.input.map((text, index) => ({ object: 'embedding', index, embedding: [text.length % 7, 1, (index + 1) / 10, 0.5] })),
          model: 'race-test',
          usage: { prompt_tokens: 1, total_tokens: 1 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  memory = createMemory({ database: f.database, embedder: createOpenAICompatibleEmbedder({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'race-test', dimensions: 4 }), key: testInstallationKey });
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await f.cleanup();
});

async function vectors(): Promise<string[]> {
  return f.database.adminScope('test: facts with a vector', async (tx) => (await tx.query<{ fact_id: string }>('select fact_id from fact_embeddings order by fact_id')).rows.map((row) => row.fact_id));
}

describe('embedding facts while they are forgotten', () => {
  it('writes no vector for a fact forgotten while its vector was computed, and writes the others', async () => {
    const scope = f.dm('scout', 'ada');
    const secret = await memory.remember(scope, { content: 'my safe is behind the walnut painting', provenance: saidBy(f.people.ada) });
    const kept = await memory.remember(scope, { content: 'my favourite colour is teal', provenance: saidBy(f.people.ada) });
    expect(await vectors()).toEqual([]);

    held = new Promise((resolve) => (release = resolve));
    const job = memory.embedFacts();
    // The embedder has the texts and has not answered yet.
    while (received.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(received[0]).toEqual(['my safe is behind the walnut painting', 'my favourite colour is teal']);
    await memory.forget(scope, secret.fact.id, saidBy(f.people.ada));
    release();

    expect(await job).toEqual({ embedded: 1, skipped: 1, model: expect.stringContaining('race-test') });
    // Positive control: the fact that stayed has its vector; the forgotten one has none.
    expect(await vectors()).toEqual([kept.fact.id]);
  });
});
