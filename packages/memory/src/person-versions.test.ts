import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { memoryFixture, saidBy, type MemoryFixture } from './testing/fixture.js';

let f: MemoryFixture;
beforeEach(async () => {
  f = await memoryFixture();
});
afterEach(async () => {
  await f?.cleanup();
});

describe("a person's every version", () => {
  it('reads every version of the scope’s own person’s facts (a forgotten one without words), and what they told for everyone; never another person’s (not even told for everyone) or another agent’s', async () => {
    const { memory } = f;
    const ada = f.dm('scout', 'ada');
    const { fact: bike } = await memory.remember(ada, { content: 'my bike is teal', provenance: saidBy(f.people.ada) });
    const { fact: navy } = await memory.correct(ada, bike.id, 'my bike is navy', saidBy(f.people.ada));
    const { fact: locker } = await memory.remember(ada, { content: 'my locker is 12', provenance: saidBy(f.people.ada) });
    await memory.forget(ada, locker.id, saidBy(f.people.ada));
    const { fact: office } = await memory.remember(ada, { content: 'the office opens at nine', audience: 'agent', provenance: saidBy(f.people.ada) });
    await memory.remember(f.dm('scout', 'bob'), { content: 'my cat is orange', provenance: saidBy(f.people.bob) });
    await memory.remember(f.dm('scout', 'bob'), { content: 'the lift is out of order', audience: 'agent', provenance: saidBy(f.people.bob) });
    await memory.remember(f.dm('coder', 'ada'), { content: 'my violin is old', provenance: saidBy(f.people.ada) });

    const versions = await memory.personVersions(ada);
    expect(versions.map(({ id, content, trust }) => ({ id, content, trust }))).toEqual([
      { id: bike.id, content: 'my bike is teal', trust: 'retracted' },
      { id: navy.id, content: 'my bike is navy', trust: 'active' },
      { id: locker.id, content: null, trust: 'forgotten' },
      // What she told the agent for everyone is hers too.
      { id: office.id, content: 'the office opens at nine', trust: 'active' },
    ]);
    expect(versions[0]!.supersededBy).toBe(navy.id);
    // Positive control: the other scopes hold what this one leaves out.
    expect((await memory.personVersions(f.dm('scout', 'bob'))).map((fact) => fact.content)).toEqual(['my cat is orange', 'the lift is out of order']);
    expect((await memory.personVersions(f.dm('coder', 'ada'))).map((fact) => fact.content)).toEqual(['my violin is old']);
    expect((await memory.list(ada)).map((fact) => fact.content).sort()).toEqual(['my bike is navy', 'the lift is out of order', 'the office opens at nine']);
  });

  it('refuses a scope that is not a person’s own', async () => {
    await expect(f.memory.personVersions({ agentId: f.agents.scout, personId: null, audience: 'agent' })).rejects.toMatchObject({ code: 'scope_invalid' });
    await expect(f.memory.personVersions(f.group('scout', 'ada'))).rejects.toMatchObject({ code: 'scope_invalid' });
  });
});
