/** Conformance cases on messages: how they map in, are answered, split, redelivered, retried and refused by a platform. */
import { pairingHint } from '@roster/core';
import { expect, it } from 'vitest';
import { until } from '@roster/channels/testing';
import type { ConformanceContext } from './context.js';

export function messageCases(context: ConformanceContext): void {
  const { channel, prefix, stranger, linked, serve, sentTo, say, query, capture } = context;

  it('maps a one-to-one message to the inbound message the core takes', async () => {
    const events = await capture();
    const user = stranger();
    const delivered = await context.platform.deliver({ chat: 'dm', from: user, text: 'hello there' });
    await until(() => events.length === 1, 'the adapter to hand the message over');
    const event = events[0]!;
    expect(event.inbound).toEqual({
      channel: channel(),
      account: context.platform.adapter.account,
      conversation: { externalId: expect.any(String), kind: 'dm' },
      sender: expect.objectContaining({ externalId: user.id }),
      externalMessageId: delivered.messageId,
      text: 'hello there',
    });
    // A platform that names its people in events (Telegram) passes the name on; one that does not (Slack) leaves it out.
    expect([undefined, user.name]).toContain(event.inbound.sender.displayName);
    expect(event.inbound.conversation.externalId).toContain(context.platform.dmChatId(user));
    expect(event).toMatchObject({ mentionsBot: false, replyTo: null, replyToBot: false, media: [], deliveryId: delivered.deliveryId });
    expect(event.target).toMatchObject({ chatId: context.platform.dmChatId(user), recipient: user.id });
  });

  it('maps group messages: the mention of the bot, the message replied to, the chat kind', async () => {
    const events = await capture();
    const user = stranger();
    const mention = await context.platform.deliver({ chat: 'group', from: user, text: 'what is new?', mentionBot: true });
    await until(() => events.some((event) => event.inbound.externalMessageId === mention.messageId), 'the mention');
    const reply = await context.platform.deliver({ chat: 'group', from: user, text: 'and then?', replyTo: { id: mention.messageId, fromBot: true } });
    await until(() => events.some((event) => event.inbound.externalMessageId === reply.messageId), 'the reply');
    await context.platform.deliver({ chat: 'group', from: user, text: 'just chatting with friends' });

    const byId = (id: string) => events.find((event) => event.inbound.externalMessageId === id)!;
    expect(byId(mention.messageId).inbound).toMatchObject({ conversation: { kind: 'group' }, sender: { externalId: user.id }, text: 'what is new?' });
    expect(byId(mention.messageId).inbound.conversation.externalId).toContain(context.platform.groupChatId);
    expect(byId(mention.messageId)).toMatchObject({ mentionsBot: true, replyTo: null, replyToBot: false });
    expect(byId(reply.messageId)).toMatchObject({ mentionsBot: false, replyTo: mention.messageId, replyToBot: true });
    expect(byId(reply.messageId).inbound.text).toBe('and then?');
    // A group message for nobody in particular is not for the bot: handed over as such, or not at all.
    for (const event of events.filter((event) => event.inbound.text === 'just chatting with friends')) {
      expect(event).toMatchObject({ mentionsBot: false, replyToBot: false });
    }
    // The same group is one conversation, whoever writes.
    expect(new Set(events.map((event) => event.inbound.conversation.externalId)).size).toBe(1);
  });

  it('answers a linked person through the core, and in a group only when the bot is addressed', async () => {
    await serve();
    const { user } = await linked();
    const noted = await say(user, 'remember that my desk is on floor 3');
    expect(noted.map((message) => message.text)).toEqual(['Noted: your desk is on floor 3']);
    expect(noted[0]!.chatId).toBe(context.platform.dmChatId(user));
    // A new message, a new turn: the memory answers it.
    const recalled = await say(user, 'what do you know about my desk?');
    expect(recalled.map((message) => message.text).join('\n')).toContain('your desk is on floor 3');

    const before = context.platform.sent().length;
    await context.platform.deliver({ chat: 'group', from: user, text: 'remember that lunch is at noon' });
    await context.served!.settled();
    expect(context.platform.sent().length).toBe(before);
    await context.platform.deliver({ chat: 'group', from: user, text: 'what do you know about the standup?', mentionBot: true });
    await context.served!.settled();
    const answered = context.platform.sent().slice(before);
    expect(answered.map((message) => message.text)).toEqual([`I don't know anything about the standup yet.`]);
    expect(answered[0]!.chatId).toBe(context.platform.groupChatId);
  });

  it(`splits a long reply at the platform's limit, on sentence and line ends`, async () => {
    const limit = context.platform.adapter.capabilities.textLimit;
    await serve();
    const user = stranger();
    const sentences: string[] = [];
    for (let index = 0; sentences.join(' ').length < limit * 2.5; index += 1) {
      sentences.push(`Sentence ${index} says ${'something '.repeat(index % 17)}plainly.${index % 9 === 8 ? '\n' : ''}`);
    }
    const text = sentences.join(' ');
    expect(await context.served!.send({ chatId: context.platform.dmChatId(user), recipient: user.id }, text)).toBe(true);
    const parts = sentTo(context.platform.dmChatId(user)).map((message) => message.text);
    expect(parts.length).toBeGreaterThanOrEqual(3);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(limit);
      expect(part).toMatch(/plainly\.$/);
    }
    const words = (value: string) => value.split(/\s+/).filter((word) => word !== '');
    expect(words(parts.join(' '))).toEqual(words(text));
  });

  it('handles a redelivered update once', async () => {
    await serve();
    const { user, person } = await linked();
    const delivered = await context.platform.deliver({ chat: 'dm', from: user, text: 'remember that my locker is number 12' });
    await context.served!.settled();
    await context.platform.redeliver(delivered);
    await context.served!.settled();
    expect(sentTo(context.platform.dmChatId(user)).map((message) => message.text)).toEqual(['Noted: your locker is number 12']);
    const stored = await query<{ n: string }>(`select count(*) as n from messages where external_id = $1 and role = 'person' and person_id = $2`, [delivered.messageId, person.id]);
    expect(Number(stored[0]!.n)).toBe(1);
    const facts = await context.fixture.roster.memory.list({ agentId: context.fixture.agents.Scout.id, personId: person.id, audience: 'private' });
    expect(facts.map((fact) => fact.content)).toEqual(['my locker is number 12']);

    // A stranger's message is never stored, and its redelivery still gets the hint once.
    const other = stranger();
    const refused = await context.platform.deliver({ chat: 'dm', from: other, text: 'hi' });
    await context.served!.settled();
    await context.platform.redeliver(refused);
    await context.served!.settled();
    expect(sentTo(context.platform.dmChatId(other)).map((message) => message.text)).toEqual([pairingHint(prefix())]);
  });

  it('waits as long as a 429 asks, then sends', async () => {
    await serve();
    const { user } = await linked();
    context.platform.rateLimitNextSend(1);
    const answered = await say(user, 'remember that my bike is blue');
    expect(answered.map((message) => message.text)).toEqual(['Noted: your bike is blue']);
    const attempts = context.platform.attempts().filter((attempt) => attempt.chatId === context.platform.dmChatId(user));
    expect(attempts.map((attempt) => attempt.outcome)).toEqual(['rate-limited', 'sent']);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('marks a person who blocked the bot unreachable, without failing the turn', async () => {
    await serve();
    const { user, person } = await linked(await context.fixture.roster.core.directory.addPerson({ name: `Blocker${context.personNumber()}`, role: 'owner' }));
    const reach = async () =>
      (await query<{ unreachable: boolean }>('select unreachable_at is not null as unreachable from identities where channel = $1 and external_id = $2', [channel(), user.id]))[0]!.unreachable;
    const owners = async () => (await context.fixture.roster.core.directory.ownerIdentities(channel())).map((owner) => owner.externalId);
    expect(await reach()).toBe(false);
    expect(await owners()).toContain(user.id);

    context.platform.block(user);
    expect(await say(user, 'remember that my phone is off on Sundays')).toEqual([]);
    expect(context.platform.attempts().filter((attempt) => attempt.chatId === context.platform.dmChatId(user)).map((attempt) => attempt.outcome)).toEqual(['blocked']);
    expect(await reach()).toBe(true);
    expect(await owners()).not.toContain(user.id);
    // The turn itself went through: the message, the reply and the fact are kept.
    const facts = await context.fixture.roster.memory.list({ agentId: context.fixture.agents.Scout.id, personId: person.id, audience: 'private' });
    expect(facts.map((fact) => fact.content)).toEqual(['my phone is off on Sundays']);
    const kept = await query<{ role: string }>(
      `select m.role from messages m join conversations c on c.id = m.conversation_id where c.channel = $1 and c.person_id = $2 order by m.created_at`,
      [channel(), person.id],
    );
    expect(kept.map((row) => row.role)).toEqual(['person', 'agent']);

    // Writing again clears it.
    context.platform.unblock(user);
    expect((await say(user, 'what do you know about my phone?')).map((message) => message.text).join('\n')).toContain('your phone is off on Sundays');
    expect(await reach()).toBe(false);
  });
}
