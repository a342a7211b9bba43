import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeMatches, matchRule } from './match.js';
import { memoryFixture, saidBy, type MemoryFixture } from './testing/fixture.js';

describe('memory.match', () => {
  let f: MemoryFixture;
  const ids: Record<string, string> = {};
  const stored = ['my sister lives in Lisbon', 'I like pizza', 'my dog is called Rex', 'I drink coffee'];

  beforeAll(async () => {
    f = await memoryFixture();
    for (const content of stored) ids[content] = (await f.memory.remember(f.dm('scout', 'ada'), { content, provenance: saidBy(f.people.ada) })).fact.id;
  }, 60_000);
  afterAll(() => f.cleanup());

  it('returns nothing for a request no fact matches, as search returns nothing above its floor', async () => {
    expect(await f.memory.match(f.dm('scout', 'ada'), 'I play chess on Fridays')).toEqual([]);
    expect(await f.memory.search(f.dm('scout', 'ada'), 'I play chess on Fridays')).toEqual([]);
    // Asked for everything, search still ranks its top results, each marked as below the floor.
    const all = await f.memory.search(f.dm('scout', 'ada'), 'I play chess on Fridays', { includeIrrelevant: true });
    expect(all.length).toBeGreaterThan(0);
    expect(all.every((result) => !result.relevant)).toBe(true);
    // Positive control: a question about a stored fact finds it, marked relevant.
    const dog = await f.memory.search(f.dm('scout', 'ada'), 'what is my dog called?');
    expect(dog.map((result) => [result.fact.content, result.relevant])).toEqual([['my dog is called Rex', true]]);
  });

  it('returns exactly the matching fact, with its shared words and similarity', async () => {
    const matches = await f.memory.match(f.dm('scout', 'ada'), 'my dog is called Max');
    expect(matches.map((match) => match.fact.content)).toEqual(['my dog is called Rex']);
    expect(matches[0]).toMatchObject({ reasons: ['words', 'similarity'], sharedWords: ['call', 'dog'], wordShare: 2 / 3 });
    expect(matches[0]!.similarity).toBeGreaterThan(0.5);
    expect(matches[0]!.score).toBeGreaterThanOrEqual(matchRule('hashing-256').minScore);
  });

  it('checks one named fact: the matching one passes, an unrelated one does not', async () => {
    const scope = f.dm('scout', 'ada');
    expect(await f.memory.match(scope, 'I like pizza', { factIds: [ids['my sister lives in Lisbon']!] })).toEqual([]);
    expect((await f.memory.match(scope, 'I like pizza', { factIds: [ids['I like pizza']!] })).map((match) => match.fact.id)).toEqual([ids['I like pizza']]);
    expect(await f.memory.match(scope, 'I like pizza', { factIds: ['not-an-id'] })).toEqual([]);
  });

  it('matches only inside its scope', async () => {
    expect(await f.memory.match(f.dm('coder', 'ada'), 'I like pizza')).toEqual([]);
    expect(await f.memory.match(f.dm('scout', 'bob'), 'I like pizza')).toEqual([]);
    expect((await f.memory.match(f.dm('scout', 'ada'), 'I like pizza')).map((match) => match.fact.content)).toEqual(['I like pizza']);
  });

  it('on shared words alone for an embedder whose similarity was never measured', () => {
    expect(matchRule('hashing-256').useSimilarity).toBe(true);
    expect(matchRule('openai:text-embedding-3-small')).toMatchObject({ useSimilarity: false, minWordShare: matchRule('hashing-256').minWordShare });
  });

  it('keeps as close only the matches too near the best to tell apart', () => {
    expect(closeMatches([])).toEqual([]);
    expect(closeMatches([{ score: 0.9 }, { score: 0.6 }])).toEqual([{ score: 0.9 }]);
    expect(closeMatches([{ score: 0.84 }, { score: 0.82 }, { score: 0.5 }])).toEqual([{ score: 0.84 }, { score: 0.82 }]);
  });
});
