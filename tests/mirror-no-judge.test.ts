import { mirrorReport } from '@roster/learning';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from './support/fake-openai.js';
import { startLoopFixture, type LoopFixture } from './support/learning-loop.js';

/**
 * The learning loop with no model: every agent on the offline engine and no
 * ROSTER_JUDGE_ENGINE. The mirror cannot judge, so it replays nothing and
 * says so in its result and report, instead of recording an error run every
 * night. Beside it, a judge configured: the same case is replayed.
 */
let loop: LoopFixture;

beforeAll(async () => {
  loop = await startLoopFixture();
});

afterAll(async () => {
  await loop?.cleanup();
});

async function mirrorRuns(): Promise<number> {
  return loop.test.database.adminScope('test: count mirror runs', async (tx) => Number((await tx.query<{ n: string }>('select count(*) as n from mirror_runs')).rows[0]!.n));
}

describe('the mirror with no judge configured', () => {
  it('records no run, night after night, and says "no judge configured" in the job result and the report', async () => {
    const say = (text: string) =>
      loop.roster.core.handle({ channel: 'cli', conversation: { externalId: 'scout-ada', kind: 'dm' }, sender: { personId: loop.ids.ada }, text }, { agent: 'Scout' });
    await say('remember that my train leaves at nine');
    await say('actually, my train leaves at ten past nine');
    // The correction queued a harvest of its own; running one more makes sure it is done.
    await loop.run('harvest');
    const cases = await loop.test.database.adminScope('test: count mirror cases', async (tx) => Number((await tx.query<{ n: string }>('select count(*) as n from mirror_cases')).rows[0]!.n));
    expect(cases).toBe(1);

    for (let night = 0; night < 2; night += 1) {
      const result = await loop.run('mirror', { agentId: loop.ids.scout, rerunAfterHours: 0 });
      expect(result).toMatchObject({ replayed: 0, errors: 0, notice: expect.stringMatching(/^no judge configured: /), unjudged: [{ agent: 'Scout', waiting: 1 }] });
    }
    expect(await mirrorRuns()).toBe(0);
    const report = await mirrorReport(loop.test.database, loop.ids.scout, { judged: false });
    expect(report.summary).toBe(`0 of 1 corrections no longer repeated (${String((await loop.run('mirror', { agentId: loop.ids.scout, rerunAfterHours: 0 })).notice)})`);
    expect(report.cases[0]?.history).toEqual([]);
  });

  it('replays the waiting case once a judge is configured (positive control)', async () => {
    const fake = await startFakeOpenAi(() => ({ text: '{"verdict": "pass", "reason": "it kept the correction"}' }));
    const judged = await startLoopFixture(fake.engine);
    try {
      const say = (text: string) =>
        judged.roster.core.handle({ channel: 'cli', conversation: { externalId: 'scout-ada', kind: 'dm' }, sender: { personId: judged.ids.ada }, text }, { agent: 'Scout' });
      await say('remember that my train leaves at nine');
      await say('actually, my train leaves at ten past nine');
      await judged.run('harvest');
      const result = await judged.run('mirror', { agentId: judged.ids.scout });
      expect(result).toMatchObject({ replayed: 1, passed: 1 });
      expect(result).not.toHaveProperty('notice');
    } finally {
      await judged.cleanup();
      await fake.close();
    }
  });
});

describe('lesson review with no judge configured', () => {
  it('never joins two people’s words into one lesson; one person’s repeated correction becomes their own', async () => {
    const say = (person: 'ada' | 'bob', text: string) =>
      loop.roster.core.handle({ channel: 'cli', conversation: { externalId: `coder-${person}`, kind: 'dm' }, sender: { personId: loop.ids[person] }, text }, { agent: 'Coder' });
    await say('ada', 'from now on, write the tests first');
    await say('bob', 'from now on, write the tests first');
    expect(await loop.run('review', { agentId: loop.ids.coder })).toMatchObject({ proposed: 0 });
    // Positive control: Ada says it again, and her own statement is proposed, as hers.
    await say('ada', 'next time, write the tests first');
    expect(await loop.run('review', { agentId: loop.ids.coder })).toMatchObject({ proposed: 1 });
    const approvals = await loop.test.database.adminScope('test: approvals', async (tx) => (await tx.query<{ text: string; person_id: string | null }>('select text, person_id from approvals')).rows);
    expect(approvals).toEqual([{ text: 'Write the tests first.', person_id: loop.ids.ada }]);
  });
});
