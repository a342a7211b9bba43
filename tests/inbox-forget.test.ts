import { createLeaseStore } from '@roster/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLoopFixture, type LoopFixture } from './support/learning-loop.js';
import { scanDatabase } from './support/scan.js';

/**
 * A message a gateway took and has not answered waits in the inbox with its
 * words, for as long as its turn. A forget reaches it as it reaches the
 * transcript: the person's waiting messages that hold the words keep none of
 * them; a person's erasure takes every message of theirs that waits. Other
 * people's waiting messages, and the person's others, are the controls.
 */

let loop: LoopFixture;

beforeAll(async () => {
  loop = await startLoopFixture();
});

afterAll(async () => {
  await loop?.cleanup();
});

/** A Telegram message as a gateway keeps it in the inbox. */
function taken(deliveryId: string, sender: string, text: string) {
  return {
    deliveryId,
    sender,
    event: {
      inbound: { channel: 'telegram', account: 'default', conversation: { externalId: sender, kind: 'dm' }, sender: { externalId: sender }, text, externalMessageId: deliveryId },
      target: { chatId: sender, recipient: sender },
      media: [],
      mentionsBot: false,
      replyTo: null,
      replyToBot: false,
      deliveryId,
    },
  };
}

describe('messages waiting in a gateway’s inbox', () => {
  it('a forget leaves no words in the person’s waiting messages that hold them; an erasure takes all of theirs; the others keep theirs', async () => {
    const { core, memory } = loop.roster;
    await core.directory.linkIdentity(loop.ids.ada, 'telegram', '501');
    await core.directory.linkIdentity(loop.ids.bob, 'telegram', '502');
    const lease = await createLeaseStore(loop.test.database).acquire('telegram', 'default', 'gateway-under-test', 60_000);
    const fence = { channel: 'telegram', account: 'default', holder: 'gateway-under-test', token: lease!.token };

    const scope = { agentId: loop.ids.scout, personId: loop.ids.ada, audience: 'private' as const };
    const { fact } = await memory.remember(scope, { content: 'my locker code is walnut 7731', provenance: { actor: { kind: 'person', id: loop.ids.ada } } });
    // Waiting: Ada saying it again, Ada saying something else, Bob saying something of his own.
    await core.inbox.take(fence, taken('9001', '501', 'again: my locker code is walnut 7731'));
    await core.inbox.take(fence, taken('9002', '501', 'the ferry leaves at nine'));
    await core.inbox.take(fence, taken('9003', '502', 'my kayak is moored at pier quokkalin'));
    // A delivery kept already is not kept twice.
    expect(await core.inbox.take(fence, taken('9003', '502', 'my kayak is moored at pier quokkalin'))).toBeNull();
    // The positive control: the words wait in the inbox.
    expect(Object.keys(await scanDatabase(loop.test.database, ['walnut 7731']))).toContain('channel_inbox.event');

    const forgotten = await memory.forget(scope, fact.id, { actor: { kind: 'person', id: loop.ids.ada } });
    expect(forgotten.erased).toMatchObject({ channel_inbox: 1 });
    expect(await scanDatabase(loop.test.database, ['walnut 7731'])).toEqual({});
    const waiting = await core.inbox.waiting(fence);
    expect(waiting.map((message) => (message.event === null ? null : (message.event.inbound as { text: string }).text))).toEqual([
      null,
      'the ferry leaves at nine',
      'my kayak is moored at pier quokkalin',
    ]);

    const bob = await core.directory.personByName('Bob');
    const erasure = await core.erasePerson(bob, 'Bob', { kind: 'owner', id: loop.ids.ada });
    expect(erasure.erased).toMatchObject({ channel_inbox: 1 });
    expect(await scanDatabase(loop.test.database, ['quokkalin'])).toEqual({});
    expect((await core.inbox.waiting(fence)).map((message) => message.id)).toEqual(waiting.slice(0, 2).map((message) => message.id));

    // A gateway that no longer holds the account keeps nothing.
    const stale = { ...fence, token: fence.token + 1 };
    await expect(core.inbox.take(stale, taken('9004', '501', 'one more'))).rejects.toMatchObject({ code: 'lease_lost' });
  });
});
