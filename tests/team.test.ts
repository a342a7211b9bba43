import { afterEach, describe, expect, it } from 'vitest';
import { agentOf, sleep, startFakeOpenAi } from './support/fake-openai.js';
import { rosterFixture, type RosterFixture } from './support/roster-runtime.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function factsOf(f: RosterFixture, agent: string, person: string): Promise<string[]> {
  const scope = { agentId: f.agents[agent]!.id, personId: f.people[person]!.id, audience: 'private' as const };
  return (await f.roster.memory.list(scope)).map((fact) => fact.content ?? '');
}

describe('team mode', () => {
  it('three agents answer one message, each remembering into its own scope', async () => {
    const f = await rosterFixture({ agents: [{ name: 'Scout' }, { name: 'Coder' }, { name: 'Helper' }], people: ['Ada'] });
    cleanups.push(() => f.cleanup());
    const result = await f.roster.core.handle(
      { channel: 'cli', conversation: { externalId: 'team-ada', kind: 'dm' }, sender: { personId: f.people.Ada!.id }, text: 'remember that I like figs' },
      { team: true },
    );
    expect(result.replies.map((reply) => [reply.agent, reply.text]).sort()).toEqual([
      ['Coder', 'Noted: you like figs'],
      ['Helper', 'Noted: you like figs'],
      ['Scout', 'Noted: you like figs'],
    ]);
    for (const agent of ['Scout', 'Coder', 'Helper']) expect(await factsOf(f, agent, 'Ada')).toEqual(['I like figs']);
    const rows = await f.database.adminScope('test: facts by agent', async (tx) =>
      (await tx.query<{ n: string }>('select count(distinct agent_id) as n from facts')).rows[0]!.n,
    );
    expect(Number(rows)).toBe(3);
  });

  it('keeps each agent in its own scope when their tool calls interleave', async () => {
    // Each agent's model answers after a different delay, so that one agent's
    // tool call runs while another's turn is between its steps.
    const delays: Record<string, [number, number]> = { Scout: [120, 0], Coder: [0, 150], Helper: [60, 60] };
    const order: string[] = [];
    const fake = await startFakeOpenAi(async (request) => {
      const agent = agentOf(request);
      const step = request.toolResults.length;
      order.push(`${agent}:${step}`);
      await sleep(delays[agent]?.[step] ?? 0);
      if (step === 0) return { tool: 'remember', input: { content: `${agent} keeps the ${agent.toLowerCase()} key` } };
      return { text: `${agent} done` };
    });
    cleanups.push(() => fake.close());
    const f = await rosterFixture({
      agents: [{ name: 'Scout', engine: fake.engine }, { name: 'Coder', engine: fake.engine }, { name: 'Helper', engine: fake.engine }],
      people: ['Ada', 'Bob'],
    });
    cleanups.push(() => f.cleanup());

    for (const person of ['Ada', 'Bob']) {
      const result = await f.roster.core.handle(
        { channel: 'web', conversation: { externalId: `team-${person}`, kind: 'dm' }, sender: { personId: f.people[person]!.id }, text: 'keep your key in mind' },
        { team: true },
      );
      expect(result.replies.map((reply) => reply.text).sort()).toEqual(['Coder done', 'Helper done', 'Scout done']);
    }
    // The steps did interleave: some agent's second step came before another's first finished.
    const firstSteps = order.slice(0, 3).map((entry) => entry.split(':')[1]);
    expect(firstSteps).toEqual(['0', '0', '0']);
    for (const agent of ['Scout', 'Coder', 'Helper']) {
      for (const person of ['Ada', 'Bob']) {
        expect(await factsOf(f, agent, person), `${agent}/${person}`).toEqual([`${agent} keeps the ${agent.toLowerCase()} key`]);
      }
    }
  });
});
