import { until } from '@roster/channels/testing';
import { pairingHint } from '@roster/core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeMatrix, type FakeMatrix } from './fake-matrix.js';
import { encryptedRoomNotice } from './matrix-text.js';
import { startTestRoster, type TestRoster } from './test-roster.js';

/** Invitations and encrypted rooms, through the real core: only the homeserver is a fake. */
describe('Matrix rooms', () => {
  let roster: TestRoster;
  let fake: FakeMatrix;
  /** `@tess1` may invite the bot to group rooms; nobody else may. */
  const inviter = '@tess1:roster.test';

  beforeAll(async () => {
    roster = await startTestRoster();
  });
  afterAll(async () => {
    await roster?.cleanup();
  });
  beforeEach(async () => {
    fake = await startFakeMatrix({ adapter: { roomInviters: [inviter] } });
  });
  afterEach(async () => {
    expect(fake.unknownRequests()).toEqual([]);
    await fake.close();
  });

  const textsIn = (roomId: string): string[] => fake.sent().filter((message) => message.chatId === roomId).map((message) => message.text);

  it('joins a direct chat anyone opens, where the core decides what a stranger gets', async () => {
    const served = await roster.serve(fake.adapter);
    const stranger = fake.user(5);
    const roomId = await fake.invite({ from: stranger, direct: true });
    await until(() => fake.membership(roomId) === 'join', 'the bot to join the direct chat');
    await fake.say(roomId, stranger, { msgtype: 'm.text', body: 'remember that my pin is 4321', 'm.mentions': {} });
    await served.settled();
    expect(textsIn(roomId)).toEqual([pairingHint('!')]);
    expect(await roster.query(`select 1 from facts where content like '%4321%'`, [])).toEqual([]);

    // Positive control: once linked, the same person in the same room is remembered.
    await roster.link(stranger);
    await fake.say(roomId, stranger, { msgtype: 'm.text', body: 'remember that my desk is by the window', 'm.mentions': {} });
    await served.settled();
    expect(textsIn(roomId)).toEqual([pairingHint('!'), 'Noted: your desk is by the window']);
  });

  it('joins a group room when its inviter is listed, answers there when addressed, and declines anyone else’s', async () => {
    const served = await roster.serve(fake.adapter);
    const host = fake.user(1);
    const friend = fake.user(2);
    await roster.link(friend);
    const allowed = await fake.invite({ from: host, direct: false, others: [friend] });
    await until(() => fake.membership(allowed) === 'join', 'the bot to join the listed inviter’s room');
    await fake.say(allowed, friend, { msgtype: 'm.text', body: 'Roster: what do you know about the standup?', 'm.mentions': { user_ids: [fake.botUserId] } });
    await served.settled();
    expect(textsIn(allowed)).toEqual([`I don't know anything about the standup yet.`]);

    // The same room offered by someone not listed: declined, and nothing is said there.
    const declined = await fake.invite({ from: fake.user(3), direct: false, others: [friend] });
    await until(() => fake.membership(declined) === 'leave', 'the bot to decline the invitation');
    expect(textsIn(declined)).toEqual([]);
    // An invitation that calls itself direct but brings others in is joined, and is a group: a message not for the bot is not answered.
    const crowded = await fake.invite({ from: fake.user(3), direct: true, others: [friend] });
    await until(() => fake.membership(crowded) === 'join', 'the bot to join the direct invitation');
    await fake.say(crowded, friend, { msgtype: 'm.text', body: 'what do you know about lunch?', 'm.mentions': {} });
    await served.settled();
    expect(textsIn(crowded)).toEqual([]);
  });

  it('tells an encrypted room once that it reads unencrypted rooms only, reads nothing there, and does not repeat it after a restart', async () => {
    const served = await roster.serve(fake.adapter);
    const person = fake.user(4);
    await roster.link(person);
    const roomId = await fake.invite({ from: person, direct: true, encrypted: true });
    await until(() => textsIn(roomId).length === 1, 'the notice to the encrypted room');
    expect(textsIn(roomId)).toEqual([encryptedRoomNotice]);

    await fake.sayEncrypted(roomId, person);
    await fake.sayEncrypted(roomId, person);
    // A plain message in an encrypted room is not read either: an answer would go out unencrypted.
    await fake.say(roomId, person, { msgtype: 'm.text', body: 'remember that my safe code is 8080', 'm.mentions': {} });
    await served.settled();
    // Positive control, after them in the stream: the same person is answered in their unencrypted chat.
    await fake.deliver({ chat: 'dm', from: person, text: 'remember that my desk is on floor 2' });
    await served.settled();
    expect(textsIn(fake.dmChatId(person))).toEqual(['Noted: your desk is on floor 2']);
    expect(textsIn(roomId)).toEqual([encryptedRoomNotice]);
    expect(await roster.query(`select 1 from facts where content like '%8080%'`, [])).toEqual([]);

    // A group that turned encryption on before the bot could read it: told once too.
    const group = await fake.group({ people: [fake.user(6), person], encrypted: true });
    await fake.sayEncrypted(group, person);
    await until(() => textsIn(group).length === 1, 'the notice to the encrypted group');
    await fake.sayEncrypted(group, person);
    await served.settled();

    // After a restart the rooms are read again from the first sync: what they were told is there, so it is not said twice.
    await served.stop();
    const again = await roster.serve(fake.makeAdapter({ roomInviters: [inviter] }));
    await fake.sayEncrypted(roomId, person);
    await fake.sayEncrypted(group, person);
    await fake.deliver({ chat: 'dm', from: person, text: 'what do you know about my desk?' });
    await again.settled();
    expect(textsIn(fake.dmChatId(person)).at(-1)).toBe('- your desk is on floor 2');
    expect(textsIn(roomId)).toEqual([encryptedRoomNotice]);
    expect(textsIn(group)).toEqual([encryptedRoomNotice]);
  });
});
