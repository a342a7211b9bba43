import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentOf, startFakeOpenAi, type FakeRequest } from './support/fake-openai.js';
import { rosterFixture, type RosterFixture } from './support/roster-runtime.js';

/**
 * Who reads below the relevance floor. A language model is given the ranked
 * results, below the floor too: it sets aside what does not bear on the
 * message, and a paraphrased question ("what car do I drive?" of "I drive a
 * Fiat") holds too little of the fact's words to clear it. The offline
 * engine, which says what it finds, reads above the floor only. The model's
 * prompt is captured at the far side of the network.
 */
let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;
let f: RosterFixture;

const textOf = (request: FakeRequest) =>
  request.messages.map((message) => (typeof message.content === 'string' ? message.content : JSON.stringify(message.content))).join('\n');

async function ask(agent: string, text: string) {
  return f.roster.core.handle({ channel: 'web', conversation: { externalId: `dm-ada-${agent}`, kind: 'dm' }, sender: { personId: f.people.Ada!.id }, text }, { agent });
}

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => ({ text: `${agentOf(request)} answered` }));
  f = await rosterFixture({ agents: [{ name: 'Scout', engine: fake.engine }, { name: 'Tess' }], people: ['Ada', 'Bob'] });
  const ada = { kind: 'person' as const, id: f.people.Ada!.id };
  for (const agent of ['Scout', 'Tess']) {
    const scope = { agentId: f.agents[agent]!.id, personId: f.people.Ada!.id, audience: 'private' as const };
    await f.roster.memory.remember(scope, { content: 'I drive a Fiat', provenance: { actor: ada } });
    await f.roster.memory.remember(scope, { content: 'my locker number is 4418', provenance: { actor: ada } });
  }
  // Bob's fact with the same words, for the scope control: no engine ever reads it for Ada.
  await f.roster.memory.remember(
    { agentId: f.agents.Scout!.id, personId: f.people.Bob!.id, audience: 'private' },
    { content: 'Bob drives a Volvo car', provenance: { actor: { kind: 'person', id: f.people.Bob!.id } } },
  );
});

afterAll(async () => {
  await f?.cleanup();
  await fake?.close();
});

describe('the relevance floor and the engines', () => {
  it("gives a language model the ranked facts of a paraphrased question, below the floor too, and lists them as the memories used", async () => {
    const result = await ask('Scout', 'what car do I drive?');
    const prompt = textOf(fake.requests.find((request) => agentOf(request) === 'Scout' && textOf(request).includes('what car do I drive?'))!);
    expect(prompt).toContain('I drive a Fiat');
    expect(result.replies[0]!.memories.map((memory) => memory.fact.content)).toContain('I drive a Fiat');
    // Never another person's fact, whatever the floor.
    expect(prompt).not.toContain('Volvo');
  });

  it('control: the offline engine, asked the same, says it does not know rather than a fact below the floor', async () => {
    const result = await ask('Tess', 'what car do I drive?');
    expect(result.replies[0]!.text).not.toContain('Fiat');
    expect(result.replies[0]!.text).not.toContain('4418');
    expect(result.replies[0]!.memories).toEqual([]);
    // And asked in the fact's own words, it answers.
    const known = await ask('Tess', 'what is my locker number?');
    expect(known.replies[0]!.text).toContain('4418');
  });
});
