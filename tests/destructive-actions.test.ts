import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAi, type FakeAnswer, type FakeRequest } from './support/fake-openai.js';
import { rosterFixture, type RosterFixture } from './support/roster-runtime.js';

/**
 * Forget, correct and update act only on a fact that matches what the person
 * asked about, through the real core, the real memory tools and the real
 * search over an embedded Postgres: an unrelated request leaves every fact as
 * it was, a related one acts on exactly its fact, and two facts that match
 * about equally make the agent ask which one.
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function setup(facts: readonly string[], engine?: string) {
  const f: RosterFixture = await rosterFixture({ agents: [engine === undefined ? { name: 'Scout' } : { name: 'Scout', engine }], people: ['Ada'] });
  cleanups.push(() => f.cleanup());
  const ada = f.people.Ada!.id;
  const scope = { agentId: f.agents.Scout!.id, personId: ada, audience: 'private' as const };
  const ids: Record<string, string> = {};
  for (const content of facts) {
    ids[content] = (await f.roster.memory.remember(scope, { content, provenance: { actor: { kind: 'person', id: ada } } })).fact.id;
  }
  const say = async (text: string) => {
    const result = await f.roster.core.handle({ channel: 'cli', conversation: { externalId: 'ada-scout', kind: 'dm' }, sender: { personId: ada }, text }, { agent: 'Scout' });
    return result.replies[0]!;
  };
  /** What a read returns now, sorted. */
  const readable = async () => (await f.roster.memory.list(scope)).map((fact) => fact.content).sort();
  /** The trust state of every fact ever stored in the scope, by content. */
  const trust = async () =>
    Object.fromEntries(
      (await f.database.adminScope('test: read trust states', (tx) => tx.query<{ content: string; trust: string }>('select content, trust from facts where agent_id = $1 order by content', [scope.agentId]))).rows.map(
        (row) => [row.content, row.trust],
      ),
    );
  return { f, scope, ids, say, readable, trust };
}

const sorted = (facts: readonly string[]) => [...facts].sort();

describe('forget acts only on a matching fact', () => {
  it('forgets nothing for an unrelated request, and the one fact a related request names', async () => {
    const stored = ['my sister lives in Lisbon', 'my dog is called Rex', 'I drink coffee'];
    const { say, readable, trust } = await setup(stored);

    const unrelated = await say('forget that I like pizza');
    expect(unrelated.text).toBe('I found nothing like that to forget.');
    expect(unrelated.toolCalls.map((call) => call.toolName)).toEqual(['recall']);
    expect(await readable()).toEqual(sorted(stored));

    // Positive control: the related request forgets exactly its fact.
    const related = await say('forget that my sister lives in Lisbon');
    expect(related.text).toBe('Forgotten.');
    expect(await readable()).toEqual(sorted(['my dog is called Rex', 'I drink coffee']));
    expect(await trust()).toEqual({ '': 'forgotten', 'I drink coffee': 'active', 'my dog is called Rex': 'active' });
  });

  it('asks which one when two facts match about equally, and forgets nothing', async () => {
    const stored = ['my sister lives in Lisbon', 'my brother lives in Lisbon', 'I like pizza'];
    const { say, readable } = await setup(stored);

    const asked = await say('forget who lives in Lisbon');
    expect(asked.text).toMatch(/^Which one: 1\. my (sister|brother) lives in Lisbon 2\. my (sister|brother) lives in Lisbon\?/);
    expect(asked.toolCalls.map((call) => call.toolName)).toEqual(['recall']);
    expect(await readable()).toEqual(sorted(stored));

    // Positive control: words that fit only one forget that one.
    expect((await say('forget that my brother lives in Lisbon')).text).toBe('Forgotten.');
    expect(await readable()).toEqual(sorted(['my sister lives in Lisbon', 'I like pizza']));
  });
});

describe('correct acts only on a matching fact', () => {
  it('retracts nothing for an unrelated correction, which is noted as new, and retracts the one fact a related correction names', async () => {
    const stored = ['my sister lives in Oslo', 'I like pizza', 'I drink coffee'];
    const { say, readable, trust } = await setup(stored);

    const unrelated = await say('actually, my dog is called Rex');
    expect(unrelated.text).toBe('Noted: your dog is called Rex (I found nothing like it to correct.)');
    expect(unrelated.toolCalls.map((call) => call.toolName)).toEqual(['recall', 'remember']);
    expect(await readable()).toEqual(sorted([...stored, 'my dog is called Rex']));
    expect(Object.values(await trust())).toEqual(['active', 'active', 'active', 'active']);

    // Positive control.
    const related = await say('actually, my dog is called Max');
    expect(related.text).toBe('Corrected: your dog is called Max');
    expect(await trust()).toEqual({
      'I drink coffee': 'active',
      'I like pizza': 'active',
      'my dog is called Max': 'active',
      'my dog is called Rex': 'retracted',
      'my sister lives in Oslo': 'active',
    });
  });

  it('asks which one when two facts match about equally, and retracts nothing', async () => {
    const stored = ['my sister lives in Oslo', 'my sister lives in Lisbon', 'I drink coffee'];
    const { say, readable, trust } = await setup(stored);

    const asked = await say('actually, my sister lives in Porto');
    expect(asked.text).toMatch(/^Which one: 1\. my sister lives in (Oslo|Lisbon) 2\. my sister lives in (Oslo|Lisbon)\?/);
    expect(await readable()).toEqual(sorted(stored));
    expect(Object.values(await trust())).toEqual(['active', 'active', 'active']);
  });
});

describe('update acts only on a matching fact', () => {
  it('closes nothing for an unrelated update, which is noted as new, and closes the one fact a related update names', async () => {
    const stored = ['my sister lives in Lisbon', 'I like pizza', 'my dog is called Rex'];
    const { f, scope, ids, say, readable } = await setup(stored);

    const unrelated = await say('update: I now drink decaf');
    expect(unrelated.text).toBe('Noted: you now drink decaf (I found nothing like it to update.)');
    expect(await readable()).toEqual(sorted([...stored, 'I now drink decaf']));
    for (const content of stored) expect((await f.roster.memory.get(scope, ids[content]!)).validTo).toBeNull();

    // Positive control: the related update closes exactly its fact and links the new one.
    const related = await say('update: my dog is called Max now');
    expect(related.text).toBe('Updated: your dog is called Max now');
    expect(await readable()).toEqual(sorted(['my sister lives in Lisbon', 'I like pizza', 'I now drink decaf', 'my dog is called Max now']));
    const history = await f.roster.memory.history(scope, ids['my dog is called Rex']!);
    expect(history.map((entry) => [entry.relation, entry.fact.content, entry.fact.validTo === null])).toEqual([
      ['this', 'my dog is called Rex', false],
      ['later', 'my dog is called Max now', true],
    ]);
  });
});

describe('a model that names an unrelated fact is refused', () => {
  /** A fake model that calls one tool with `input`, then answers "done". */
  async function model(input: (ids: Record<string, string>) => { tool: string; input: unknown }) {
    let ids: Record<string, string> = {};
    const fake = await startFakeOpenAi((request: FakeRequest): FakeAnswer => (request.toolResults.length === 0 ? input(ids) : { text: 'done' }));
    cleanups.push(() => fake.close());
    return { engine: fake.engine, fake, setIds: (value: Record<string, string>) => (ids = value) };
  }

  const stored = ['my sister lives in Lisbon', 'I like pizza', 'my dog is called Rex'];

  it.each([
    ['forget', (ids: Record<string, string>, id: string) => ({ factId: ids[id], request: 'I drink coffee' })],
    ['correct', (ids: Record<string, string>, id: string) => ({ factId: ids[id], content: 'I drink tea', request: 'I drink tea' })],
    ['update', (ids: Record<string, string>, id: string) => ({ factId: ids[id], content: 'I now drink decaf', request: 'I now drink decaf' })],
  ] as const)('%s: refused for an unrelated fact, nothing changes', async (tool, args) => {
    const { engine, fake, setIds } = await model((ids) => ({ tool, input: args(ids, 'my sister lives in Lisbon') }));
    const { ids, say, readable, trust } = await setup(stored, engine);
    setIds(ids);

    const reply = await say(`please ${tool} it`);
    expect(reply.toolCalls).toEqual([expect.objectContaining({ toolName: tool, output: { error: expect.stringMatching(/^Nothing was (forgotten|corrected|updated): fact .* does not match/) } })]);
    expect(fake.requests[1]!.toolResults.join('')).toMatch(/does not match/);
    expect(await readable()).toEqual(sorted(stored));
    expect(Object.values(await trust())).toEqual(['active', 'active', 'active']);
  });

  it.each([
    ['forget', { request: 'my sister lives in Lisbon' }, ['I like pizza', 'my dog is called Rex']],
    ['correct', { content: 'my sister lives in Porto', request: 'my sister lives in Porto' }, ['I like pizza', 'my dog is called Rex', 'my sister lives in Porto']],
    ['update', { content: 'my sister lives in Porto now', request: 'my sister lives in Porto now' }, ['I like pizza', 'my dog is called Rex', 'my sister lives in Porto now']],
  ] as const)('%s: done for the matching fact (positive control)', async (tool, extra, after) => {
    const { engine, setIds } = await model((ids) => ({ tool, input: { factId: ids['my sister lives in Lisbon'], ...extra } }));
    const { ids, say, readable } = await setup(stored, engine);
    setIds(ids);

    const reply = await say(`please ${tool} it`);
    expect(reply.toolCalls[0]?.output).not.toHaveProperty('error');
    expect(await readable()).toEqual(sorted(after));
  });

  it('tells the model the tools need the person’s words, in the stable prefix', async () => {
    const { engine, fake } = await model(() => ({ tool: 'recall', input: { query: 'pizza', matching: true } }));
    const { say } = await setup(stored, engine);

    const reply = await say('what about pizza?');
    expect(fake.requests[0]!.system[0]).toMatch(/recall and matching: true, and pass the person's words as request/);
    expect(reply.toolCalls[0]?.output).toEqual({
      facts: [expect.objectContaining({ content: 'I like pizza', match: expect.objectContaining({ reasons: ['words', 'similarity'], sharedWords: ['pizza'], close: true }) })],
    });
  });
});
