import type { Scope } from '@roster/db';
import { approveLesson, listApprovals, mirrorReport, retireLesson, runAsJob } from '@roster/learning';
import type { Runtime } from '@roster/runtime';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from './support/fake-openai.js';
import { startLoopFixture, type LoopFixture } from './support/learning-loop.js';

interface Loop extends LoopFixture {
  say(agent: string, person: 'ada' | 'bob', text: string): ReturnType<Runtime['core']['handle']>;
}

let loop: Loop;
let verdicts: string[];
let judged: string[];
let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;

beforeEach(async () => {
  verdicts = [];
  judged = [];
  // The judge is a language model on the far side of the network: a local fake with scripted verdicts.
  fake = await startFakeOpenAi((request) => {
    judged.push(JSON.stringify(request.messages));
    return { text: verdicts.shift() ?? '{"verdict": "fail", "reason": "no verdict scripted"}' };
  });
  const fixture = await startLoopFixture(fake.engine);
  loop = {
    ...fixture,
    say(agent, person, text) {
      return fixture.roster.core.handle(
        { channel: 'cli', conversation: { externalId: `${agent}-${person}`, kind: 'dm' }, sender: { personId: fixture.ids[person] }, text },
        { agent },
      );
    },
  };
});

afterEach(async () => {
  await loop?.cleanup();
  await fake?.close();
});

async function lesson(agentId: string, text: string): Promise<string> {
  const approvalId = await loop.test.database.withScope({ agentId, personId: null, audience: 'agent' }, async (tx) => {
    const { rows } = await tx.query<{ id: string }>(`insert into approvals (agent_id, text, proposed_by_kind, proposed_by) values ($1, $2, 'agent', 'test') returning id`, [agentId, text]);
    return rows[0]!.id;
  });
  return (await approveLesson(loop.test.database, loop.roster.memory.audit, approvalId, { kind: 'person', personId: loop.ids.ada })).id;
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the learning loop', () => {
  it('turns a correction into a mirror case of that agent only, replays it with its own lessons, graduates it, and reactivates it on a fail', async () => {
    await lesson(loop.ids.scout, 'Quote train times in the 24-hour clock, always.');
    await lesson(loop.ids.coder, 'Prefer tabs over spaces in every file.');

    const turn = await loop.say('Scout', 'ada', "that's wrong, the 5pm train is the 17:00 one, use the 24-hour clock");
    expect(turn.signals.map((signal) => signal.kind)).toEqual(['correction']);

    // The turn wrote a harvest job to the outbox; the relay hands it to the worker.
    const scoutReport = await waitFor(() => mirrorReport(loop.test.database, loop.ids.scout), (report) => report.total === 1);
    expect(scoutReport.total).toBe(1);
    expect((await mirrorReport(loop.test.database, loop.ids.coder)).total).toBe(0);

    for (let night = 1; night <= 5; night += 1) {
      verdicts.push(`{"verdict": "pass", "reason": "night ${night}: uses 17:00"}`);
      // Each night is a new night: the test does not wait 20 hours between them.
      const result = await loop.run('mirror', { agentId: loop.ids.scout, rerunAfterHours: 0 });
      expect(result).toMatchObject({ replayed: 1, passed: 1 });
    }
    let report = await mirrorReport(loop.test.database, loop.ids.scout);
    expect(report.cases[0]).toMatchObject({ status: 'graduated', streak: 5 });
    expect(report.summary).toBe('1 of 1 corrections no longer repeated');
    // The replay carried Scout's lessons and never Coder's.
    const shown = JSON.stringify(report.cases[0]!.history.map((run) => run.lessonsShown));
    expect(shown).toContain('24-hour clock');
    expect(shown).not.toContain('tabs');
    expect(judged.join('\n')).toContain('17:00');

    // A graduated case rests until its monthly check.
    expect(await loop.run('mirror', { agentId: loop.ids.scout, rerunAfterHours: 0 })).toMatchObject({ replayed: 0 });
    await loop.test.database.adminScope('test: a month passes', (tx) => tx.query(`update mirror_cases set next_check_at = now() - interval '1 second'`));
    verdicts.push('{"verdict": "fail", "reason": "said 5pm again"}');
    expect(await loop.run('mirror', { agentId: loop.ids.scout, rerunAfterHours: 0 })).toMatchObject({ replayed: 1, failed: 1 });
    // Run again the same night: the case is not replayed, nor counted, twice.
    expect(await loop.run('mirror', { agentId: loop.ids.scout })).toMatchObject({ replayed: 0 });
    report = await mirrorReport(loop.test.database, loop.ids.scout);
    expect(report.cases[0]).toMatchObject({ status: 'active', streak: 0 });
    expect(report.summary).toBe('0 of 1 corrections no longer repeated');
  });

  it('treats a judge answer that is not the strict JSON as an error, never a pass', async () => {
    await loop.say('Scout', 'ada', "that's wrong, my flight leaves from gate B, not gate A");
    await waitFor(() => mirrorReport(loop.test.database, loop.ids.scout), (report) => report.total === 1);
    verdicts.push('Sure! {"verdict": "pass", "reason": "fine"}');
    expect(await loop.run('mirror', { agentId: loop.ids.scout })).toMatchObject({ replayed: 1, passed: 0, errors: 1 });
    verdicts.push('{"verdict": "pass", "reason": "ok", "confidence": 1}');
    expect(await loop.run('mirror', { agentId: loop.ids.scout, rerunAfterHours: 0 })).toMatchObject({ errors: 1 });
    const report = await mirrorReport(loop.test.database, loop.ids.scout);
    expect(report.cases[0]).toMatchObject({ streak: 0, status: 'active' });
    expect(report.cases[0]!.history.map((run) => run.verdict)).toEqual(['error', 'error']);
  });

  it('fades every agent’s memory through the job; a faded fact leaves search and returns on restore', async () => {
    const scoutAda: Scope = { agentId: loop.ids.scout, personId: loop.ids.ada, audience: 'private' };
    const coderBob: Scope = { agentId: loop.ids.coder, personId: loop.ids.bob, audience: 'private' };
    const a = await loop.roster.memory.remember(scoutAda, { content: 'Ada once visited Lisbon', provenance: { actor: { kind: 'person', id: loop.ids.ada } } });
    const b = await loop.roster.memory.remember(coderBob, { content: 'Bob once tried Haskell', provenance: { actor: { kind: 'person', id: loop.ids.bob } } });
    await loop.test.database.adminScope('test: age the facts', (tx) => tx.query(`update facts set recorded_at = now() - interval '90 days'`));

    expect(await loop.run('fade')).toMatchObject({ faded: 2, agents: 2 });
    expect(await loop.roster.memory.search(scoutAda, 'Lisbon')).toEqual([]);
    expect(await loop.roster.memory.search(coderBob, 'Haskell')).toEqual([]);
    await loop.roster.memory.restore(scoutAda, a.fact.id, { actor: { kind: 'person', id: loop.ids.ada } });
    expect((await loop.roster.memory.search(scoutAda, 'Lisbon')).map((result) => result.fact.id)).toEqual([a.fact.id]);
    expect(b.fact.id).not.toBe(a.fact.id);
  });
});

describe('lesson review', () => {
  it('proposes, never promotes: no approval no lesson, no approval from a job, and a retired text never comes back', async () => {
    await loop.say('Scout', 'ada', 'from now on, give me prices in euros first');
    await loop.say('Scout', 'ada', 'next time give me prices in euros first');
    const review = await loop.run('review', { agentId: loop.ids.scout });
    expect(review).toMatchObject({ proposed: 1 });
    const [pending] = await listApprovals(loop.test.database, { agentId: loop.ids.scout, status: 'pending' });
    expect(pending).toMatchObject({ text: 'Give me prices in euros first.', proposedByKind: 'job', evidence: [expect.any(Object), expect.any(Object)] });
    // No approval, no lesson.
    const lessons = () => loop.test.database.adminScope('test: lessons', async (tx) => (await tx.query<{ status: string; text: string }>('select status, text from lessons')).rows);
    expect(await lessons()).toEqual([]);
    // Nothing that runs without a person can approve, even naming one.
    await expect(runAsJob('review', () => approveLesson(loop.test.database, loop.roster.memory.audit, pending!.id, { kind: 'person', personId: loop.ids.ada }))).rejects.toMatchObject({
      code: 'approval_from_job',
    });
    await expect(
      loop.test.database.adminScope('test: insert a lesson behind the approval’s back', (tx) =>
        tx.query(`insert into lessons (agent_id, text, text_hash, approved_by) values ($1, 'Give me prices in euros first.', 'x', $2)`, [loop.ids.scout, loop.ids.ada]),
      ),
    ).rejects.toThrow(/needs an approval/);
    expect(await lessons()).toEqual([]);

    // A person approves: the lesson rides in Scout's prompt from now on.
    const approved = await approveLesson(loop.test.database, loop.roster.memory.audit, pending!.id, { kind: 'person', personId: loop.ids.ada });
    expect(approved).toMatchObject({ status: 'active', version: 1, approvedBy: loop.ids.ada });
    expect(await lessons()).toEqual([{ status: 'active', text: 'Give me prices in euros first.' }]);

    // Retired: its text cannot be promoted again, by review or by approval.
    await retireLesson(loop.test.database, loop.roster.memory.audit, approved.id, 'prices vary by trip now', { kind: 'person', personId: loop.ids.ada });
    await loop.say('Scout', 'ada', 'from now on, give me prices in euros first!');
    expect(await loop.run('review', { agentId: loop.ids.scout })).toMatchObject({ proposed: 0 });
    const again = await loop.test.database.withScope({ agentId: loop.ids.scout, personId: null, audience: 'agent' }, async (tx) =>
      (await tx.query<{ id: string }>(`insert into approvals (agent_id, text, proposed_by_kind) values ($1, 'Give me prices in euros first.', 'agent') returning id`, [loop.ids.scout])).rows[0]!.id,
    );
    await expect(approveLesson(loop.test.database, loop.roster.memory.audit, again, { kind: 'person', personId: loop.ids.ada })).rejects.toMatchObject({ code: 'lesson_invalid' });
    expect((await lessons()).map((row) => row.status)).toEqual(['retired']);
  });
});

describe('lesson review across people', () => {
  const personOf = (approvalId: string) =>
    loop.test.database.adminScope('test: an approval’s person', async (tx) => (await tx.query<{ person_id: string | null }>('select person_id from approvals where id = $1', [approvalId])).rows[0]!.person_id);

  it('proposes the judge’s paraphrase of several people’s corrections, agent-wide, with each statement as evidence', async () => {
    await loop.say('Scout', 'ada', 'from now on, give me prices in euros first');
    await loop.say('Scout', 'bob', 'from now on, give me the prices in euros first');
    verdicts.push('{"lesson": "Quote every price in euros before any other currency."}');
    expect(await loop.run('review', { agentId: loop.ids.scout })).toMatchObject({ proposed: 1 });
    const [pending] = await listApprovals(loop.test.database, { agentId: loop.ids.scout, status: 'pending' });
    expect(pending?.text).toBe('Quote every price in euros before any other currency.');
    expect(pending?.evidence).toEqual([
      expect.objectContaining({ personId: loop.ids.ada, paraphrased: true }),
      expect.objectContaining({ personId: loop.ids.bob, paraphrased: true }),
    ]);
    expect(await personOf(pending!.id)).toBeNull();
    // The judge read both statements, and was asked for a paraphrase.
    const request = judged.find((text) => text.includes('general instruction'));
    expect(request).toContain('Give me prices in euros first.');
    expect(request).toContain('Give me the prices in euros first.');
  });

  it('refuses a “paraphrase” that is one person’s sentence again: nothing is proposed', async () => {
    await loop.say('Scout', 'ada', 'from now on, give me prices in euros first');
    await loop.say('Scout', 'bob', 'from now on, give me the prices in euros first');
    verdicts.push('{"lesson": "Give me prices in euros first."}');
    const review = await loop.run('review', { agentId: loop.ids.scout });
    expect(review).toMatchObject({ proposed: 0, skipped: ["Scout: the judge gave no usable paraphrase of 2 people's corrections"] });
    expect(await listApprovals(loop.test.database, { agentId: loop.ids.scout })).toEqual([]);
  });
});

describe('episodes and forgetting', () => {
  it('rebuilds the episode of a conversation without the words of a forgotten fact', async () => {
    await loop.say('Scout', 'ada', 'remember that my locker number is 4417');
    await loop.say('Scout', 'ada', 'remember that I fly to Oslo on Friday');
    expect(await loop.run('episodes', { idleMinutes: 0 })).toMatchObject({ episodes: 1 });
    const episode = () =>
      loop.test.database.adminScope('test: read the episode', async (tx) => (await tx.query<{ summary: string; stale: boolean }>('select summary, stale from episodes')).rows[0]);
    expect((await episode())?.summary).toContain('4417');

    const scope: Scope = { agentId: loop.ids.scout, personId: loop.ids.ada, audience: 'private' };
    const [locker] = await loop.roster.memory.search(scope, 'locker number');
    await loop.roster.memory.forget(scope, locker!.fact.id, { actor: { kind: 'person', id: loop.ids.ada } });
    // At once: the summary built from those messages is gone, awaiting its rebuild.
    expect(await episode()).toEqual({ summary: '', stale: true });
    expect(await loop.run('episodes', { idleMinutes: 0 })).toMatchObject({ episodes: 1 });
    const rebuilt = await episode();
    expect(rebuilt?.stale).toBe(false);
    expect(rebuilt?.summary).toContain('Oslo');
    expect(rebuilt?.summary).not.toContain('4417');
  });
});
