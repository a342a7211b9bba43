import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toSql } from 'pgvector';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOpenAICompatibleEmbedder } from '@roster/engines';
import { createHashingEmbedder } from './embedders/index.js';
import { createMemory } from './memory.js';
import { keptFactCountFrom, ScopeSizeCache, searchFacts } from './search.js';
import { testInstallationKey } from '@roster/config/testing';
import { memoryFixture, saidBy, type MemoryFixture } from './testing/fixture.js';
import { contentHash } from './text.js';

let f: MemoryFixture;
beforeEach(async () => {
  f = await memoryFixture();
});
afterEach(async () => {
  await f?.cleanup();
});

const words = ['harbour', 'violin', 'garden', 'ferry', 'lemon', 'glacier', 'lantern', 'copper', 'meadow', 'falcon', 'orchard', 'canyon', 'pepper', 'marble', 'willow', 'anchor'];

/** Deterministic pseudo-random sentences, so that the test data is the same on every run. */
function sentences(count: number, seed: number): string[] {
  let state = seed;
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state;
  };
  return Array.from({ length: count }, (_, index) => {
    const picked = Array.from({ length: 5 }, () => words[next() % words.length]);
    return `${picked.join(' ')} note ${index}`;
  });
}

describe('vector search under a scope filter', () => {
  it('returns the full number of neighbours through HNSW, as exact search does', async () => {
    const embedder = createHashingEmbedder();
    // Ten agents' worth of vectors; the queried scope holds a tenth of them.
    const agents = await f.database.adminScope('test: more agents', async (tx) => {
      const { rows } = await tx.query<{ id: string }>(
        `insert into agents (name, job) select 'Agent' || g, 'filler' from generate_series(1, 8) g returning id`,
      );
      return [f.agents.scout, f.agents.coder, ...rows.map((row) => row.id)];
    });
    const texts = sentences(3000, 7);
    const vectors = await embedder.embed(texts);
    await f.database.adminScope('test: bulk load facts and vectors', async (tx) => {
      for (let start = 0; start < texts.length; start += 300) {
        const values: unknown[] = [];
        const rows: string[] = [];
        for (let index = start; index < start + 300; index += 1) {
          const agent = agents[index % agents.length]!;
          const base = values.length;
          rows.push(`($${base + 1}::uuid, $${base + 2}::uuid, 'private', $${base + 3}, $${base + 4}, $${base + 5}::vector)`);
          values.push(agent, f.people.ada, texts[index], contentHash(texts[index]!), toSql(vectors[index]!));
        }
        await tx.query(
          `with inserted as (
             insert into facts (agent_id, person_id, audience, content, content_hash)
             select a, p, au, c, h from (values ${rows.join(', ')}) v(a, p, au, c, h, e) returning id, agent_id, person_id, content
           )
           insert into fact_embeddings (fact_id, model, agent_id, person_id, audience, embedding)
           select i.id, '${embedder.model}', i.agent_id, i.person_id, 'private', v.e
           from inserted i join (values ${rows.join(', ')}) v(a, p, au, c, h, e) on v.c = i.content`,
          values,
        );
      }
      await tx.query('analyze fact_embeddings');
    });
    const scope = f.dm('scout', 'ada');
    let overlap = 0;
    const queries = sentences(20, 99).map((text) => text.replace(/ note \d+$/, ''));
    for (const query of queries) {
      const viaIndex = await f.memory.search(scope, query, { mode: 'vector', limit: 10, exactBelow: 0, includeIrrelevant: true });
      const exact = await f.memory.search(scope, query, { mode: 'vector', limit: 10, exactBelow: 1_000_000, includeIrrelevant: true });
      expect(viaIndex).toHaveLength(10);
      expect(exact).toHaveLength(10);
      for (const result of viaIndex) expect(result.fact.agentId).toBe(f.agents.scout);
      const exactIds = new Set(exact.map((result) => result.fact.id));
      overlap += viaIndex.filter((result) => exactIds.has(result.fact.id)).length;
    }
    expect(overlap / (queries.length * 10)).toBeGreaterThanOrEqual(0.9);
  }, 240_000);
});

describe('a remote embedder', () => {
  it('leaves the vector to a job, and the fact is found by full text at once, even with the embedder down', async () => {
    const requests: string[] = [];
    const server = http.createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        requests.push(body);
        const input = (JSON.parse(body) as { input: string[] }).input;
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ data: input.map((_, index) => ({ index, embedding: Array.from({ length: 8 }, (_, i) => (i === index % 8 ? 1 : 0)) })) }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const embedder = createOpenAICompatibleEmbedder({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'tiny', dimensions: 8 });
    const memory = createMemory({ database: f.database, embedder, key: testInstallationKey });
    const scope = f.dm('scout', 'ada');

    const { fact } = await memory.remember(scope, { content: 'Ada keeps bees on the roof', provenance: saidBy(f.people.ada) });

    const state = await f.database.adminScope('test: read outbox and vectors', async (tx) => ({
      outbox: (await tx.query<{ queue: string; payload: { factId: string } }>('select queue, payload from outbox')).rows,
      vectors: Number((await tx.query<{ n: string }>('select count(*) as n from fact_embeddings')).rows[0]!.n),
    }));
    expect(state).toEqual({ outbox: [{ queue: 'embed', payload: { factId: fact.id, model: embedder.model } }], vectors: 0 });
    expect(requests).toHaveLength(0);

    await new Promise<void>((resolve) => server.close(() => resolve()));
    const results = await memory.search(scope, 'bees');
    expect(results.map((result) => result.fact.id)).toEqual([fact.id]);
    expect(results[0]!.scores.vector).toBeNull();
  });
});

describe('full-text ranking and neighbours', () => {
  // The full-text arm alone (the vector arm of a small scope brings every fact, related or not).
  it('ranks the rare word above the common one, and lends a match to the fact recorded beside it in the same scope only', async () => {
    const ada = f.dm('scout', 'ada');
    const bob = f.dm('scout', 'bob');
    const say = async (scope: typeof ada, person: string, content: string) => (await f.memory.remember(scope, { content, provenance: saidBy(person) })).fact;
    const filler = await Promise.all(['Ada likes tea', 'Ada walks to work', 'Ada reads at night'].map((content) => say(ada, f.people.ada, content)));
    const adopted = await say(ada, f.people.ada, 'Ada adopted a greyhound in spring');
    // Bob's fact is recorded between Ada's two, under the same agent.
    const bobs = await say(bob, f.people.bob, 'Bob keeps his savings under the floorboards');
    const named = await say(ada, f.people.ada, 'His name is Rex');

    const found = (await f.memory.search(ada, 'Ada greyhound', { mode: 'full-text', includeIrrelevant: true })).map((result) => result.fact.id);
    // "ada" is in every fact of the scope, "greyhound" in one: the rare word decides the first place.
    expect(found[0]).toBe(adopted.id);
    // The fact recorded after the match shares no word with the query and is found as its neighbour.
    expect(found).toContain(named.id);
    expect(found).toEqual(expect.arrayContaining(filler.map((fact) => fact.id)));
    // Bob's fact, recorded in between, is never lent to Ada.
    expect(found).not.toContain(bobs.id);
    // Without neighbours the fact that shares no word is not found.
    const alone = (await f.memory.search(ada, 'Ada greyhound', { mode: 'full-text', neighbours: 0, includeIrrelevant: true })).map((result) => result.fact.id);
    expect(alone).toContain(adopted.id);
    expect(alone).not.toContain(named.id);
    // Bob's own search sees his fact, and none of Ada's, neighbours included.
    const bobFound = (await f.memory.search(bob, 'savings greyhound Rex', { mode: 'full-text', includeIrrelevant: true })).map((result) => result.fact.id);
    expect(bobFound).toEqual([bobs.id]);
  });

  it('lends a match to the two facts recorded on each side of it, the nearer first, and to none further', async () => {
    const ada = f.dm('scout', 'ada');
    const say = async (content: string) => (await f.memory.remember(ada, { content, provenance: saidBy(f.people.ada) })).fact;
    const farBefore = await say('The kettle whistles loudly');
    const before2 = await say('The garden needs water');
    const before1 = await say('My sister visits on Sundays');
    const adopted = await say('I adopted a greyhound in spring');
    const after1 = await say('His name is Rex');
    const after2 = await say('He sleeps all afternoon');
    const farAfter = await say('The library closes at six');

    const results = await f.memory.search(ada, 'greyhound', { mode: 'full-text', includeIrrelevant: true });
    const found = results.map((result) => result.fact.id);
    const score = (id: string) => results.find((result) => result.fact.id === id)!.scores.fullText!.score;
    expect(found[0]).toBe(adopted.id);
    // Two on each side borrow, the nearer more than the next.
    expect(found).toEqual(expect.arrayContaining([before1.id, before2.id, after1.id, after2.id]));
    expect(score(after1.id)).toBeGreaterThan(score(after2.id));
    expect(score(before1.id)).toBeGreaterThan(score(before2.id));
    // The third on each side shares no word with the query and borrows nothing.
    expect(found).not.toContain(farBefore.id);
    expect(found).not.toContain(farAfter.id);
    expect(found).toHaveLength(5);
  });

  it('keeps a large scope’s count of facts between searches and ranks as counting each time does; a small scope is counted each time', async () => {
    const ada = f.dm('scout', 'ada');
    const embedder = createHashingEmbedder();
    // More agent-wide facts than the count is kept from, loaded in one statement.
    const texts = sentences(keptFactCountFrom + 200, 11);
    await f.database.adminScope('test: bulk load facts', (tx) =>
      tx.query(
        `insert into facts (agent_id, person_id, audience, content, content_hash)
         select $1, null, 'agent', t.c, t.h from unnest($2::text[], $3::text[]) as t(c, h)`,
        [f.agents.scout, texts, texts.map((text) => contentHash(text))],
      ),
    );
    const sizes = new ScopeSizeCache();
    const query = 'glacier falcon note 7';
    const counted = await searchFacts(f.database, embedder, ada, query, { mode: 'full-text', limit: 20, includeIrrelevant: true });
    const first = await searchFacts(f.database, embedder, ada, query, { mode: 'full-text', limit: 20, scopeSizes: sizes, includeIrrelevant: true });
    // The first search counted the scope and kept what it found.
    expect(sizes.get(ScopeSizeCache.factsKey(ada), keptFactCountFrom)).toBe(texts.length);
    const kept = await searchFacts(f.database, embedder, ada, query, { mode: 'full-text', limit: 20, scopeSizes: sizes, includeIrrelevant: true });
    const ranking = (results: typeof counted) => results.map((result) => [result.fact.id, result.scores.fullText]);
    expect(counted).toHaveLength(20);
    expect(ranking(first)).toEqual(ranking(counted));
    expect(ranking(kept)).toEqual(ranking(counted));

    // Bob's scope under another agent is small: counted each time, nothing kept.
    const small = f.dm('coder', 'bob');
    await f.memory.remember(small, { content: 'Bob keeps a glacier photo on his desk', provenance: saidBy(f.people.bob) });
    expect(await searchFacts(f.database, embedder, small, query, { mode: 'full-text', scopeSizes: sizes, includeIrrelevant: true })).toHaveLength(1);
    expect(sizes.get(ScopeSizeCache.factsKey(small), 0)).toBeUndefined();
  });
});
