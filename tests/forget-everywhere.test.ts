import { approveLesson, listApprovals } from '@roster/learning';
import { Redis } from 'ioredis';
import { scanDatabase, scanRedis } from './support/scan.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from './support/fake-openai.js';
import { redisUrl, startLoopFixture, type LoopFixture } from './support/learning-loop.js';

/**
 * Forget, as an adversary checks it: the whole learning loop runs first (a
 * fact, its correction said twice, harvest, a judged mirror replay, review,
 * the owner's approval of the lesson), then the person asks to forget, then
 * every text, json, array and tsvector column of every table and every Redis
 * key of the queues is scanned for the words. The scan before the forget is
 * the positive control.
 */
/** Words only this fact holds; the full-text index stores the stem of one. */
const needles = ['bakery', 'bakeri', 'pistachio'];

let loop: LoopFixture;
let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;

async function say(agent: string, person: 'ada' | 'bob', text: string) {
  return loop.roster.core.handle({ channel: 'cli', conversation: { externalId: `dm-${person}`, kind: 'dm' }, sender: { personId: loop.ids[person] }, text }, { agent });
}

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => {
    const words = JSON.stringify(request.messages);
    // The judge repeats what it read, as models do: the words reach its reason.
    const reason = words.includes('pistachio') ? 'it still forgot the pistachio bakery' : words.includes('walrus') ? 'it still ignores the walrus tabs' : 'no';
    return { text: JSON.stringify({ verdict: 'fail', reason }) };
  });
  loop = await startLoopFixture(fake.engine);
});

afterAll(async () => {
  await loop?.cleanup();
  await fake?.close();
});

describe('forget, after the whole learning loop', () => {
  it('leaves no copy of the words in any column of any table, nor in Redis; the scan before finds them', async () => {
    // Unrelated memory of another person and agent, which must stay.
    await say('Scout', 'bob', 'remember that my bike is red');
    await say('Coder', 'ada', 'remember that I write Rust');

    await say('Scout', 'ada', 'remember that my locker is behind the pistachio bakery');
    // The correction, said twice: two learning events, one mirror case, a lesson review can propose.
    await say('Scout', 'ada', 'actually, my locker is behind the pistachio bakery on the corner');
    await say('Scout', 'ada', 'actually, my locker is behind the pistachio bakery on the corner');
    await loop.run('harvest');
    const mirror = await loop.run('mirror', { agentId: loop.ids.scout });
    expect(mirror).toMatchObject({ replayed: 1 });
    await loop.run('review', { agentId: loop.ids.scout });
    const pending = await listApprovals(loop.test.database, { agentId: loop.ids.scout, status: 'pending' });
    expect(pending.map((approval) => approval.text)).toEqual(['My locker is behind the pistachio bakery on the corner.']);
    await approveLesson(loop.test.database, loop.roster.memory.audit, pending[0]!.id, { kind: 'person', personId: loop.ids.ada });

    const before = await scanDatabase(loop.test.database, needles);
    // Positive control: the words are in the transcript, the facts, the index, the signals, the case, the run, the approval and the lesson.
    expect(Object.keys(before)).toEqual(
      expect.arrayContaining([
        'messages.content',
        'facts.content',
        'facts.search_vector',
        'learning_events.text',
        'mirror_cases.text',
        'mirror_runs.reason',
        'approvals.text',
        'lessons.text',
      ]),
    );

    // The Redis scan's own control: a key that holds the words is found.
    const planted = new Redis(redisUrl);
    await planted.set(`${loop.prefix}:planted`, 'the pistachio bakery');
    expect(await scanRedis(loop.prefix, needles)).toEqual([`${loop.prefix}:planted`]);
    await planted.del(`${loop.prefix}:planted`);
    planted.disconnect();

    const forget = await say('Scout', 'ada', 'forget that my locker is behind the pistachio bakery on the corner');
    expect(forget.replies[0]?.text).toBe('Forgotten.');
    // Jobs the turn queued have run and reported by the time the scan reads Redis.
    await loop.run('embed');

    expect(await scanDatabase(loop.test.database, needles)).toEqual({});
    expect(await scanRedis(loop.prefix, needles)).toEqual([]);
    // What was not forgotten stays.
    const bob = await say('Scout', 'bob', 'what do you know about bike');
    expect(bob.replies[0]?.text).toBe('- your bike is red');
    const coder = await say('Coder', 'ada', 'what do you know about Rust');
    expect(coder.replies[0]?.text).toBe('- you write Rust');
    // The lesson no longer rides in Scout's prompts.
    const lessons = await loop.test.database.withScope({ agentId: loop.ids.scout, personId: loop.ids.ada, audience: 'private' }, async (tx) =>
      (await tx.query<{ status: string }>(`select status from lessons`)).rows.map((row) => row.status),
    );
    expect(lessons).toEqual(['retired']);
  });
});

describe('agent purge, after the whole learning loop', () => {
  /** Words only Coder heard. */
  const coderWords = ['walrus', 'marzipan'];

  it('leaves no copy of anything the agent heard or said, and keeps every other agent’s memory', async () => {
    await say('Scout', 'ada', 'remember that my tent is green');
    await say('Coder', 'ada', 'remember that my walrus project uses tabs');
    await say('Coder', 'bob', 'remember that I keep marzipan in the drawer');
    await say('Coder', 'ada', 'actually, my walrus project uses tabs of width four');
    await say('Coder', 'ada', 'actually, my walrus project uses tabs of width four');
    await loop.run('harvest');
    expect(await loop.run('mirror', { agentId: loop.ids.coder })).toMatchObject({ replayed: 1 });
    await loop.run('review', { agentId: loop.ids.coder });
    const pending = await listApprovals(loop.test.database, { agentId: loop.ids.coder, status: 'pending' });
    expect(pending).toHaveLength(1);
    await approveLesson(loop.test.database, loop.roster.memory.audit, pending[0]!.id, { kind: 'person', personId: loop.ids.ada });
    await loop.run('episodes', { agentId: loop.ids.coder, idleMinutes: 0 });

    // Positive control: Coder's words are in the transcript, the facts, the loop's tables and the episode.
    const before = await scanDatabase(loop.test.database, coderWords);
    expect(Object.keys(before)).toEqual(
      expect.arrayContaining(['messages.content', 'facts.content', 'learning_events.text', 'mirror_cases.text', 'mirror_runs.reason', 'lessons.text', 'episodes.summary']),
    );

    await loop.roster.core.directory.archiveAgent('Coder');
    const purged = await loop.roster.core.purgeAgent('Coder', 'Coder');
    expect(purged.facts).toBeGreaterThanOrEqual(2);
    await loop.run('embed');

    expect(await scanDatabase(loop.test.database, coderWords)).toEqual({});
    expect(await scanRedis(loop.prefix, coderWords)).toEqual([]);
    // Scout's memory stays, and the purged agent's name is free again.
    const scout = await say('Scout', 'ada', 'what do you know about tent');
    expect(scout.replies[0]?.text).toBe('- your tent is green');
    await expect(loop.roster.core.directory.agentByName('Coder')).rejects.toMatchObject({ code: 'agent_not_found' });
    const again = await loop.roster.core.directory.addAgent({ name: 'Coder', job: 'writes code again' });
    expect(again.id).not.toBe(loop.ids.coder);
  });
});
