import { createQueues, removePersonJobs } from '@roster/jobs';
import { approveLesson, judgeSystem, listApprovals, listLessons, paraphraseSystem } from '@roster/learning';
import { listAuditEvents } from '@roster/memory';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from './support/fake-openai.js';
import { connection, redisUrl, startLoopFixture, type LoopFixture } from './support/learning-loop.js';
import { scanDatabase, scanRedis } from './support/scan.js';

/**
 * A person's erasure, as an adversary checks it. Ada (the owner) and Bob
 * each tell Scout (in the CLI) and Coder (on Telegram) things; Bob's
 * corrections run the whole learning loop (harvest, a judged mirror replay,
 * review, the owner's approval of a lesson drawn from his words alone), and a
 * lesson is drawn from Ada's and Bob's words together (a paraphrase). Bob is
 * erased. Every text, json, array and tsvector column of every table and
 * every Redis key of the queues is scanned for his words and his name, and
 * Redis for his id; the scans before are the positive controls, and Ada's
 * memory, handle and lesson review are the control after.
 */
/** Words only Bob said (and his name); the full-text index keeps "zanzibar" and "quokkalin". */
const bobWords = ['zanzibar', 'quokkalin', 'the prices', 'bob'];
const paraphrase = 'Quote every price in euros before any other currency.';

let loop: LoopFixture;
let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;

const cli = (agent: string, person: 'ada' | 'bob', text: string) =>
  loop.roster.core.handle({ channel: 'cli', conversation: { externalId: `dm-${person}`, kind: 'dm' }, sender: { personId: loop.ids[person] }, text }, { agent });
const telegram = (externalId: string, text: string) =>
  loop.roster.core.handle({ channel: 'telegram', conversation: { externalId: `chat-${externalId}`, kind: 'dm' }, sender: { externalId }, text });

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => {
    const system = request.system.join('\n');
    if (system.includes(paraphraseSystem)) return { text: JSON.stringify({ lesson: paraphrase }) };
    // The judge repeats what it read, as models do: the words reach its reason.
    const words = JSON.stringify(request.messages);
    if (system.includes(judgeSystem)) return { text: JSON.stringify({ verdict: 'fail', reason: words.includes('zanzibar') ? 'it still forgot the zanzibar bakery' : 'no' }) };
    return { text: '{"lesson": ""}' };
  });
  loop = await startLoopFixture(fake.engine);
});

afterAll(async () => {
  await loop?.cleanup();
  await fake?.close();
});

describe('a person forgetd, after the whole learning loop, on two agents and two doors', () => {
  it('leaves none of their words or their name in any column nor in Redis, makes their handle a stranger, and keeps everything of the other person', async () => {
    const { directory } = loop.roster.core;
    await directory.bindChannel({ channel: 'telegram', agent: 'Coder', policy: 'pairing' });
    await directory.linkIdentity(loop.ids.ada, 'telegram', 'tg-ada', 'Ada L.');
    await directory.linkIdentity(loop.ids.bob, 'telegram', 'tg-bob', 'Bob T.');

    expect((await cli('Scout', 'ada', 'remember that my bike is teal')).replies[0]?.text).toBe('Noted: your bike is teal');
    expect((await telegram('tg-ada', 'remember that my violin is from Cremona')).replies[0]?.text).toBe('Noted: your violin is from Cremona');
    await cli('Scout', 'bob', 'remember that my locker is behind the zanzibar bakery');
    await cli('Scout', 'bob', 'actually, my locker is behind the zanzibar bakery on the quay');
    await cli('Scout', 'bob', 'actually, my locker is behind the zanzibar bakery on the quay');
    expect((await telegram('tg-bob', 'remember that my boat is called Quokkaline')).replies[0]?.text).toBe('Noted: your boat is called Quokkaline');
    // One instruction said by both: the review drafts one lesson from their words together.
    await cli('Scout', 'ada', 'from now on, give me prices in euros first');
    await cli('Scout', 'ada', 'from now on, give me prices in euros first');
    await cli('Scout', 'bob', 'from now on, give me the prices in euros first');
    const pendingCode = await directory.createLinkCode(loop.ids.bob);

    await loop.run('harvest');
    expect(await loop.run('mirror', { agentId: loop.ids.scout })).toMatchObject({ replayed: 1 });
    await loop.run('review', { agentId: loop.ids.scout });
    const pending = await listApprovals(loop.test.database, { agentId: loop.ids.scout, status: 'pending' });
    expect(pending.map((approval) => approval.text).sort()).toEqual(['My locker is behind the zanzibar bakery on the quay.', paraphrase]);
    for (const approval of pending) await approveLesson(loop.test.database, loop.roster.memory.audit, approval.id, { kind: 'person', personId: loop.ids.ada });
    await loop.run('episodes', { agentId: loop.ids.coder, idleMinutes: 0 });

    // Positive controls: Bob's words are in the transcript, the facts, the index, the loop's tables, the episode; his name in people.
    const before = await scanDatabase(loop.test.database, bobWords);
    expect(Object.keys(before)).toEqual(
      expect.arrayContaining([
        'people.name',
        'identities.display_name',
        'messages.content',
        'facts.content',
        'facts.search_vector',
        'learning_events.text',
        'mirror_cases.text',
        'mirror_runs.reason',
        'approvals.text',
        'lessons.text',
        'episodes.summary',
      ]),
    );
    expect(Object.keys(await scanDatabase(loop.test.database, [paraphrase.toLowerCase()]))).toEqual(expect.arrayContaining(['approvals.text', 'lessons.text']));
    // Redis: a planted key is found (the scan's own control), and the jobs his turns queued name his id.
    const planted = new Redis(redisUrl);
    await planted.set(`${loop.prefix}:planted`, 'the zanzibar bakery');
    expect(await scanRedis(loop.prefix, bobWords)).toEqual([`${loop.prefix}:planted`]);
    await planted.del(`${loop.prefix}:planted`);
    planted.disconnect();
    expect((await scanRedis(loop.prefix, [loop.ids.bob])).length).toBeGreaterThan(0);

    // Refused, changing nothing: the only owner, and a confirmation that is not the name.
    const ada = await directory.personByName('Ada');
    const bob = await directory.personByName('Bob');
    await expect(loop.roster.core.erasePerson(ada, 'Ada', { kind: 'owner' })).rejects.toMatchObject({ code: 'last_owner' });
    await expect(loop.roster.core.erasePerson(bob, 'Rob', { kind: 'owner' })).rejects.toMatchObject({ code: 'erase_unconfirmed' });
    expect(await scanDatabase(loop.test.database, bobWords)).toEqual(before);
    expect((await telegram('tg-bob', 'what do you know about boat')).replies[0]?.text).toBe('- your boat is called Quokkaline');

    const erasure = await loop.roster.core.erasePerson(bob, 'bob', { kind: 'owner', id: loop.ids.ada });
    expect(erasure).toMatchObject({ personId: loop.ids.bob, agents: 2 });
    expect(erasure.facts).toBeGreaterThanOrEqual(2);
    expect(erasure.erased).toMatchObject({ identities: 1, link_codes: 1, learning_events_reopened: 2 });
    // The jobs still in Redis that name him (ids only) go too; those the turns queue now have run first.
    await loop.run('embed');
    const queues = createQueues(connection, loop.prefix);
    try {
      await removePersonJobs(queues, loop.ids.bob);
    } finally {
      await queues.close();
    }

    expect(await scanDatabase(loop.test.database, bobWords)).toEqual({});
    expect(await scanDatabase(loop.test.database, [paraphrase.toLowerCase()])).toEqual({});
    expect(await scanRedis(loop.prefix, bobWords)).toEqual([]);
    expect(await scanRedis(loop.prefix, [loop.ids.bob])).toEqual([]);

    // His handle is a stranger: the pairing hint, no memory; his pending link code is gone; his name is free.
    const stranger = await telegram('tg-bob', 'what do you know about boat');
    expect(stranger).toMatchObject({ person: null, replies: [], notice: expect.stringMatching(/link code/) });
    expect((await telegram('tg-new', `/link ${pendingCode.code}`)).notice).toMatch(/unknown, used or expired/);
    await expect(directory.personByName('Bob')).rejects.toMatchObject({ code: 'person_not_found' });
    expect((await directory.listPeople()).map((person) => person.name)).toEqual(['Ada']);

    // Ada's memory stays, with both agents and on both doors.
    expect((await cli('Scout', 'ada', 'what do you know about bike')).replies[0]?.text).toBe('- your bike is teal');
    const hers = await telegram('tg-ada', 'what do you know about violin');
    expect(hers).toMatchObject({ person: { name: 'Ada' }, replies: [expect.objectContaining({ text: '- your violin is from Cremona' })] });
    // The lesson drawn from both is withdrawn; her statements go back to review, which drafts it again from her words alone.
    const lessons = await listLessons(loop.test.database, loop.ids.scout);
    expect(lessons.map((lesson) => lesson.status)).toEqual(['retired', 'retired']);
    await loop.run('review', { agentId: loop.ids.scout });
    const again = await listApprovals(loop.test.database, { agentId: loop.ids.scout, status: 'pending' });
    expect(again.map((approval) => approval.text)).toEqual(['Give me prices in euros first.']);

    // Each agent's audit chain records the erasure, with his random id and counts only, and every chain still verifies.
    const events = await listAuditEvents(loop.test.database, { action: 'erase-person' });
    expect(events.map((event) => event.agentId).sort()).toEqual([loop.ids.scout, loop.ids.coder].sort());
    expect(events.every((event) => event.targetKind === 'person' && event.targetId === loop.ids.bob)).toBe(true);
    expect((await loop.roster.memory.audit.verify()).every((chain) => chain.ok)).toBe(true);
  });
});
