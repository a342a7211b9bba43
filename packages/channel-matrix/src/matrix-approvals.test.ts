import { until } from '@roster/channels/testing';
import { listLessons } from '@roster/learning';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeMatrix, type FakeMatrix } from './fake-matrix.js';
import { approvalInstructions, approveKey, rejectKey } from './matrix-text.js';
import { startTestRoster, type TestRoster } from './test-roster.js';

/**
 * Approvals on a platform without buttons: the owner reacts 👍/👎 on the
 * approval message, or replies "approve"/"reject" to it. Through the real
 * core and approval desk; only the homeserver is a fake.
 */
describe('Matrix approvals', () => {
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

  const status = async (approvalId: string): Promise<string> => (await roster.query<{ status: string }>('select status from approvals where id = $1', [approvalId]))[0]!.status;
  const lessons = async (): Promise<string[]> => (await listLessons(roster.test.database, roster.scout.id)).map((lesson) => lesson.text);

  it('a reaction of the owner approves a lesson; the message then says so and its reactions go', async () => {
    const owner = fake.user(1);
    await roster.link(owner, roster.owner);
    const text = `When asked for sources, give two and say how each was checked (${Date.now()}).`;
    const approvalId = await roster.propose(text);
    await roster.serve(fake.adapter);
    const room = fake.dmChatId(owner);
    await until(() => fake.sent().some((message) => message.chatId === room && message.buttons.length > 0), 'the approval to reach the owner');
    const pushed = fake.sent().find((message) => message.chatId === room && message.buttons.length > 0)!;
    expect(pushed.text).toBe(`Scout proposes a lesson, to ride in every prompt it gets from now on:\n\n${text}${approvalInstructions}`);
    // One tap for the owner: the bot offers both reactions on it.
    const offered = () => fake.botEvents().filter((event) => event.type === 'm.reaction' && (event.content['m.relates_to'] as { event_id?: string }).event_id === pushed.id);
    await until(() => offered().length === 2, 'the bot’s reactions on the approval');
    expect(offered().map((event) => (event.content['m.relates_to'] as { key?: string }).key)).toEqual([approveKey, rejectKey]);

    await fake.react(room, owner, pushed.id, '👍🏽');
    await until(() => fake.pressAnswers().length === 1, 'the answer to the owner');
    expect(fake.pressAnswers()).toEqual([`Approved by ${roster.owner.name}: the lesson now rides in every prompt of Scout.`]);
    expect(await lessons()).toContain(text);
    expect(await status(approvalId)).toBe('approved');
    // The decision replaces the instructions, and the offered reactions are taken back.
    await until(() => fake.sent().find((message) => message.id === pushed.id)!.buttons.length === 0, 'the approval message to be edited');
    expect(fake.sent().find((message) => message.id === pushed.id)!.text).toBe(
      `Scout proposes a lesson, to ride in every prompt it gets from now on:\n\n${text}\n\nApproved by ${roster.owner.name}: the lesson now rides in every prompt of Scout.`,
    );
    const redacted = () => fake.botEvents().filter((event) => event.type === 'm.room.redaction').map((event) => event.content.redacts);
    await until(() => redacted().length === 2, 'the offered reactions to be taken back');
    expect(redacted().sort()).toEqual(offered().map((event) => event.event_id).sort());
  });

  it('a reply “reject” of the owner rejects; the reactions of someone else decide nothing', async () => {
    const owner = fake.user(2);
    const member = fake.user(3);
    await roster.link(owner, roster.owner);
    await roster.link(member);
    const text = `Always answer in French (${Date.now()}).`;
    const approvalId = await roster.propose(text);
    const served = await roster.serve(fake.adapter);
    const room = fake.dmChatId(owner);
    await until(() => fake.sent().some((message) => message.chatId === room && message.buttons.length > 0), 'the approval to reach the owner');
    const pushed = fake.sent().find((message) => message.chatId === room && message.buttons.length > 0)!;

    await fake.react(room, member, pushed.id, approveKey);
    await until(() => fake.pressAnswers().length === 1, 'the answer to the member');
    expect(fake.pressAnswers()[0]).toBe('Only the owner decides on this; nothing changed.');
    expect(await status(approvalId)).toBe('pending');

    // A reply that is not a decision is words for the agent, in the owner's chat.
    await fake.say(room, owner, { msgtype: 'm.text', body: 'what do you know about French?', 'm.relates_to': { 'm.in_reply_to': { event_id: pushed.id } }, 'm.mentions': { user_ids: [fake.botUserId] } });
    await served.settled();
    expect(await status(approvalId)).toBe('pending');
    expect(fake.sent().at(-1)!.text).toBe(`I don't know anything about French yet.`);

    await fake.say(room, owner, { msgtype: 'm.text', body: 'Reject.', 'm.relates_to': { 'm.in_reply_to': { event_id: pushed.id } }, 'm.mentions': { user_ids: [fake.botUserId] } });
    await until(() => fake.pressAnswers().length === 2, 'the answer to the owner');
    expect(fake.pressAnswers()[1]).toBe(`Rejected by ${roster.owner.name}.`);
    expect(await status(approvalId)).toBe('rejected');
    expect(await lessons()).not.toContain(text);
    // The reply was a decision, not a message: nothing of it is in the transcript.
    expect(await roster.query(`select 1 from messages where content = 'Reject.'`, [])).toEqual([]);
  });

  it('a reaction on an approval sent before a restart still decides', async () => {
    const owner = fake.user(4);
    await roster.link(owner, roster.owner);
    const text = `Cite the page number of every quote (${Date.now()}).`;
    const approvalId = await roster.propose(text);
    const first = await roster.serve(fake.adapter);
    const room = fake.dmChatId(owner);
    await until(() => fake.sent().some((message) => message.chatId === room && message.buttons.length > 0), 'the approval to reach the owner');
    const pushed = fake.sent().find((message) => message.chatId === room && message.buttons.length > 0)!;
    await first.stop();
    // Enough talk since that the approval is not among the room's last events a first sync brings (older than the catch-up, so not answered).
    for (let index = 0; index < 25; index += 1) fake.queue(room, owner, { msgtype: 'm.text', body: `note ${index}`, 'm.mentions': {} });

    // A new process knows nothing of the message: it asks the homeserver for the event the reaction is on.
    const again = await roster.serve(fake.makeAdapter({ catchUpMs: 0 }));
    expect(await again.pushApprovals()).toBe(0);
    await fake.react(room, owner, pushed.id, approveKey);
    await until(async () => (await status(approvalId)) === 'approved', 'the approval to be decided');
    expect(await lessons()).toContain(text);
    expect(fake.requests()).toContain(`GET /_matrix/client/v3/rooms/${room}/event/${pushed.id}`);
  });
});
