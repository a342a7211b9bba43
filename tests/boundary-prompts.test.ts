import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentOf, startFakeOpenAi, type FakeRequest } from './support/fake-openai.js';
import { rosterFixture, type RosterFixture } from './support/roster-runtime.js';

/**
 * What each agent's model receives, captured at the far side of the network:
 * two agents × two people × one-to-one, group and team conversations. Every
 * line said carries a marker naming who said it to whom and where, and every
 * reply repeats the marker it answered, so a leak of either shows up.
 */
let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;
let f: RosterFixture;

const textOf = (request: FakeRequest) =>
  request.messages
    .map((message) => (typeof message.content === 'string' ? message.content : JSON.stringify(message.content)))
    .join('\n');

async function say(person: 'Ada' | 'Bob', conversation: { externalId: string; kind: 'dm' | 'group' }, text: string, options: { agent?: string; team?: boolean } = {}) {
  return f.roster.core.handle({ channel: 'web', conversation, sender: { personId: f.people[person]!.id }, text }, options);
}

/** The prompt the named agent's model received for the message that holds `probe`. */
function promptFor(agent: string, probe: string): string {
  const request = fake.requests.find((candidate) => agentOf(candidate) === agent && textOf(candidate).includes(probe));
  if (request === undefined) throw new Error(`${agent} never received ${probe}`);
  return textOf(request);
}

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => {
    const last = request.messages.at(-1);
    const marker = /marker-[a-z-]+/.exec(typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? ''))?.[0] ?? 'nothing';
    return { text: `${agentOf(request)} heard ${marker}` };
  });
  f = await rosterFixture({ agents: [{ name: 'Scout', engine: fake.engine }, { name: 'Coder', engine: fake.engine }], people: ['Ada', 'Bob'] });
  const adaDm = { externalId: 'dm-ada', kind: 'dm' as const };
  const bobDm = { externalId: 'dm-bob', kind: 'dm' as const };
  const group = { externalId: 'group-1', kind: 'group' as const };
  // One direct conversation per person, shared by every agent they talk to there.
  await say('Ada', adaDm, 'marker-ada-to-scout-alone', { agent: 'Scout' });
  await say('Ada', adaDm, 'marker-ada-to-coder-alone', { agent: 'Coder' });
  await say('Ada', adaDm, 'marker-ada-to-the-team', { team: true });
  await say('Bob', bobDm, 'marker-bob-to-scout-alone', { agent: 'Scout' });
  await say('Ada', group, '@Scout marker-ada-in-the-group');
  // The probes: the next message of each pair, and one in the group.
  await say('Ada', adaDm, 'probe-ada-coder', { agent: 'Coder' });
  await say('Ada', adaDm, 'probe-ada-scout', { agent: 'Scout' });
  await say('Bob', bobDm, 'probe-bob-scout', { agent: 'Scout' });
  await say('Bob', bobDm, 'probe-bob-coder', { agent: 'Coder' });
  await say('Bob', group, '@Coder probe-bob-group');
});

afterAll(async () => {
  await f?.cleanup();
  await fake?.close();
});

describe("what reaches an agent's model", () => {
  it("never holds what a person told another agent alone, nor that agent's reply; the control holds them for the agent told", () => {
    const coder = promptFor('Coder', 'probe-ada-coder');
    expect(coder).not.toContain('marker-ada-to-scout-alone');
    expect(coder).not.toContain('Scout heard marker-ada-to-scout-alone');
    // Positive control: Coder's own exchange with Ada, and what Ada said to the whole team there.
    expect(coder).toContain('marker-ada-to-coder-alone');
    expect(coder).toContain('Coder heard marker-ada-to-coder-alone');
    expect(coder).toContain('marker-ada-to-the-team');

    const scout = promptFor('Scout', 'probe-ada-scout');
    expect(scout).toContain('marker-ada-to-scout-alone');
    expect(scout).toContain('marker-ada-to-the-team');
    expect(scout).not.toContain('marker-ada-to-coder-alone');
    expect(scout).not.toContain('Coder heard marker-ada-to-coder-alone');
  });

  it("never holds another person's conversation with the same agent", () => {
    const scoutForBob = promptFor('Scout', 'probe-bob-scout');
    expect(scoutForBob).toContain('marker-bob-to-scout-alone');
    for (const marker of ['marker-ada-to-scout-alone', 'marker-ada-to-coder-alone', 'marker-ada-to-the-team', 'marker-ada-in-the-group']) {
      expect(scoutForBob).not.toContain(marker);
    }
    const coderForBob = promptFor('Coder', 'probe-bob-coder');
    expect(coderForBob).not.toContain('marker-bob-to-scout-alone');
    expect(coderForBob).not.toContain('marker-ada');
  });

  it('holds what was said to everyone in a group, and nothing said one-to-one', () => {
    const group = promptFor('Coder', 'probe-bob-group');
    expect(group).toContain('marker-ada-in-the-group');
    expect(group).toContain('Scout heard marker-ada-in-the-group');
    for (const marker of ['marker-ada-to-scout-alone', 'marker-ada-to-coder-alone', 'marker-ada-to-the-team', 'marker-bob-to-scout-alone']) {
      expect(group).not.toContain(marker);
    }
  });
});
