import { until } from '@roster/channels/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeMatrix, type FakeMatrix } from './fake-matrix.js';
import { startTestRoster, type TestRoster } from './test-roster.js';

/** The connection to the homeserver: 429s, a sync that breaks, a restart that lost its place. Only the homeserver is a fake. */
describe('Matrix sync and sends', () => {
  let roster: TestRoster;
  let fake: FakeMatrix;

  beforeAll(async () => {
    roster = await startTestRoster();
  });
  afterAll(async () => {
    await roster?.cleanup();
  });
  beforeEach(async () => {
    fake = await startFakeMatrix();
  });
  afterEach(async () => {
    expect(fake.unknownRequests()).toEqual([]);
    await fake.close();
  });

  const textsIn = (roomId: string): string[] => fake.sent().filter((message) => message.chatId === roomId).map((message) => message.text);
  const stored = async (eventId: string): Promise<number> =>
    Number((await roster.query<{ n: string }>(`select count(*) as n from messages where external_id = $1 and role = 'person'`, [eventId]))[0]!.n);

  it('waits out M_LIMIT_EXCEEDED as long as a Retry-After header asks, then sends', async () => {
    const served = await roster.serve(fake.adapter);
    const person = fake.user(1);
    await roster.link(person);
    fake.rateLimitNext({ retryAfterMs: 1000, header: true });
    await fake.deliver({ chat: 'dm', from: person, text: 'remember that my bike is red' });
    await served.settled();
    expect(textsIn(fake.dmChatId(person))).toEqual(['Noted: your bike is red']);
    const attempts = fake.attempts().filter((attempt) => attempt.chatId === fake.dmChatId(person));
    expect(attempts.map((attempt) => attempt.outcome)).toEqual(['rate-limited', 'sent']);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('resumes a dropped sync connection from where it was, losing and repeating nothing', async () => {
    const served = await roster.serve(fake.adapter);
    const person = fake.user(2);
    await roster.link(person);
    const room = fake.dmChatId(person);
    const first = await fake.deliver({ chat: 'dm', from: person, text: 'remember that my train leaves at six' });
    await served.settled();

    // The held long poll breaks while nothing is happening; the next message comes over the resumed sync.
    await until(() => fake.dropSyncs() > 0, 'a held sync connection to break');
    const second = await fake.deliver({ chat: 'dm', from: person, text: 'remember that my cat is called Miso' });
    await served.settled();

    // The connection breaks while a message is on its way: the bot asks again from the same place and gets it once.
    fake.dropNextSync();
    const third = await fake.deliver({ chat: 'dm', from: person, text: 'what do you know about my cat?' });
    await served.settled();

    const texts = textsIn(room);
    expect(texts.slice(0, 2)).toEqual(['Noted: your train leaves at six', 'Noted: your cat is called Miso']);
    expect(texts).toHaveLength(3);
    expect(texts[2]).toContain('- your cat is called Miso');
    for (const delivered of [first, second, third]) expect(await stored(delivered.messageId)).toBe(1);
    // The SDK's sync picked up again by itself: the adapter was started once (one whoami), never again.
    expect(fake.requests().filter((request) => request === 'GET /_matrix/client/v3/account/whoami')).toHaveLength(1);
  });

  it('after a restart that lost its place, answers what came while it was away and nothing it answered before', async () => {
    const served = await roster.serve(fake.adapter);
    const person = fake.user(3);
    await roster.link(person);
    const room = fake.dmChatId(person);
    const before = await fake.deliver({ chat: 'dm', from: person, text: 'remember that my locker is number 12' });
    await served.settled();
    await served.stop();

    // Said while Roster was away; the new adapter's first sync replays the room's last events, the answered one among them.
    const away = fake.queue(room, person, { msgtype: 'm.text', body: 'remember that my locker key is blue', 'm.mentions': {} });
    const again = await roster.serve(fake.makeAdapter());
    await until(() => textsIn(room).length === 2, 'the answer to what was said while away');
    await again.settled();
    expect(textsIn(room)).toEqual(['Noted: your locker is number 12', 'Noted: your locker key is blue']);
    expect(await stored(before.messageId)).toBe(1);
    expect(await stored(away.messageId)).toBe(1);

    // A message older than the catch-up window is not answered after a restart: it was answered, or is stale.
    await again.stop();
    const stale = fake.queue(room, person, { msgtype: 'm.text', body: 'remember that my old phone was grey', 'm.mentions': {} });
    const late = await roster.serve(fake.makeAdapter({ catchUpMs: 0 }));
    await fake.deliver({ chat: 'dm', from: person, text: 'what do you know about my locker?' });
    await late.settled();
    expect(textsIn(room).slice(2).join('\n')).toContain('your locker key is blue');
    expect(textsIn(room)).toHaveLength(3);
    expect(await stored(stale.messageId)).toBe(0);
  });
});
