/**
 * The channel conformance suite: what every channel adapter must do, run
 * against the real core (a PGlite database, the offline engine) and a fake
 * of the platform's far side that the adapter's own test supplies. Test-only:
 * it imports vitest.
 */
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { pairingHint, type Agent, type Person } from '@roster/core';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createApprovalDesk, listLessons } from '@roster/learning';
import { createRuntime, type Runtime } from '@roster/runtime';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ChannelEvent } from '@roster/contracts';
import { serveChannel, type ServedChannel, type ServeChannelOptions } from '../serve.js';
import type { ChannelHarness, FakePlatform, PlatformUser, SentRecord } from './harness.js';

export type { ChannelHarness, Delivered, FakePlatform, PlatformMessage, PlatformUser, SendAttempt, SentRecord } from './harness.js';

/** Wait until `check` holds (polling); fails with `what` after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface Fixture {
  test: TestDatabase;
  roster: Runtime;
  agents: Record<'Scout' | 'Coder', Agent>;
  owner: Person;
}

export function describeChannelConformance(name: string, harness: ChannelHarness): void {
  describe(`channel conformance: ${name}`, () => {
    let fixture: Fixture;
    let platform: FakePlatform;
    let served: ServedChannel | undefined;
    let people = 0;
    let users = 0;

    beforeAll(async () => {
      const test = await openTestDatabase();
      const roster = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
      const directory = roster.core.directory;
      const agents = {
        Scout: await directory.addAgent({ name: 'Scout', job: 'finds and checks sources' }),
        Coder: await directory.addAgent({ name: 'Coder', job: 'writes code' }),
      };
      const owner = await directory.addPerson({ name: 'Olive', role: 'owner' });
      fixture = { test, roster, agents, owner };
    });
    afterAll(async () => {
      await fixture?.test.cleanup();
    });
    beforeEach(async () => {
      platform = await harness.start();
    });
    afterEach(async () => {
      await served?.stop();
      served = undefined;
      await platform.close();
    });

    const channel = () => platform.adapter.channel;
    const prefix = () => platform.adapter.capabilities.commandPrefix;
    /** A new person on the platform, not linked to anyone. */
    const stranger = (): PlatformUser => platform.user(++users);
    /** A new person on the platform, linked to a new person of the wallet (or to `person`). */
    async function linked(person?: Person): Promise<{ user: PlatformUser; person: Person }> {
      const user = stranger();
      const who = person ?? (await fixture.roster.core.directory.addPerson({ name: `Person${++people}` }));
      await fixture.roster.core.directory.linkIdentity(who.id, channel(), user.id, user.name);
      return { user, person: who };
    }
    /** The account talks to Scout unless a person switches (two agents in the wallet: without a binding, people are asked which). */
    const bindToScout = () => fixture.roster.core.directory.bindChannel({ channel: channel(), account: platform.adapter.account, agent: 'Scout', policy: 'pairing' });
    async function serve(options: Partial<ServeChannelOptions> = {}): Promise<ServedChannel> {
      await bindToScout();
      served = await serveChannel({ adapter: platform.adapter, core: fixture.roster.core, ...options });
      return served;
    }
    const sentTo = (chatId: string): SentRecord[] => platform.sent().filter((message) => message.chatId === chatId);
    /** Say something in a one-to-one chat and wait for it to be handled. */
    async function say(user: PlatformUser, text: string): Promise<SentRecord[]> {
      const before = platform.sent().length;
      await platform.deliver({ chat: 'dm', from: user, text });
      await served!.settled();
      return platform.sent().slice(before);
    }
    async function command(user: PlatformUser, words: string, chat: 'dm' | 'group' = 'dm'): Promise<string> {
      const before = platform.sent().length;
      await platform.command(user, chat, words);
      await served!.settled();
      return platform
        .sent()
        .slice(before)
        .map((message) => message.text)
        .join('\n');
    }
    const query = async <T>(sql: string, values: unknown[]): Promise<T[]> =>
      fixture.test.database.adminScope('conformance: read', async (tx) => (await tx.query<T & Record<string, unknown>>(sql, values)).rows);
    async function capture(): Promise<ChannelEvent[]> {
      const captured: ChannelEvent[] = [];
      const controller = new AbortController();
      await platform.adapter.start({
        signal: controller.signal,
        onMessage: (event) => void captured.push(event),
        onApprovalPress: async () => ({ text: 'not here', decided: false }),
      });
      return captured;
    }

    it('maps a one-to-one message to the inbound message the core takes', async () => {
      const events = await capture();
      const user = stranger();
      const delivered = await platform.deliver({ chat: 'dm', from: user, text: 'hello there' });
      await until(() => events.length === 1, 'the adapter to hand the message over');
      const event = events[0]!;
      expect(event.inbound).toEqual({
        channel: channel(),
        account: platform.adapter.account,
        conversation: { externalId: expect.any(String), kind: 'dm' },
        sender: expect.objectContaining({ externalId: user.id }),
        externalMessageId: delivered.messageId,
        text: 'hello there',
      });
      // A platform that names its people in events (Telegram) passes the name on; one that does not (Slack) leaves it out.
      expect([undefined, user.name]).toContain(event.inbound.sender.displayName);
      expect(event.inbound.conversation.externalId).toContain(platform.dmChatId(user));
      expect(event).toMatchObject({ mentionsBot: false, replyTo: null, replyToBot: false, media: [], deliveryId: delivered.deliveryId });
      expect(event.target).toMatchObject({ chatId: platform.dmChatId(user), recipient: user.id });
    });

    it('maps group messages: the mention of the bot, the message replied to, the chat kind', async () => {
      const events = await capture();
      const user = stranger();
      const mention = await platform.deliver({ chat: 'group', from: user, text: 'what is new?', mentionBot: true });
      await until(() => events.some((event) => event.inbound.externalMessageId === mention.messageId), 'the mention');
      const reply = await platform.deliver({ chat: 'group', from: user, text: 'and then?', replyTo: { id: mention.messageId, fromBot: true } });
      await until(() => events.some((event) => event.inbound.externalMessageId === reply.messageId), 'the reply');
      await platform.deliver({ chat: 'group', from: user, text: 'just chatting with friends' });

      const byId = (id: string) => events.find((event) => event.inbound.externalMessageId === id)!;
      expect(byId(mention.messageId).inbound).toMatchObject({ conversation: { kind: 'group' }, sender: { externalId: user.id }, text: 'what is new?' });
      expect(byId(mention.messageId).inbound.conversation.externalId).toContain(platform.groupChatId);
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
      expect(noted[0]!.chatId).toBe(platform.dmChatId(user));
      // A new message, a new turn: the memory answers it.
      const recalled = await say(user, 'what do you know about my desk?');
      expect(recalled.map((message) => message.text).join('\n')).toContain('your desk is on floor 3');

      const before = platform.sent().length;
      await platform.deliver({ chat: 'group', from: user, text: 'remember that lunch is at noon' });
      await served!.settled();
      expect(platform.sent().length).toBe(before);
      await platform.deliver({ chat: 'group', from: user, text: 'what do you know about the standup?', mentionBot: true });
      await served!.settled();
      const answered = platform.sent().slice(before);
      expect(answered.map((message) => message.text)).toEqual([`I don't know anything about the standup yet.`]);
      expect(answered[0]!.chatId).toBe(platform.groupChatId);
    });

    it(`splits a long reply at the platform's limit, on sentence and line ends`, async () => {
      const limit = platform.adapter.capabilities.textLimit;
      await serve();
      const user = stranger();
      const sentences: string[] = [];
      for (let index = 0; sentences.join(' ').length < limit * 2.5; index += 1) {
        sentences.push(`Sentence ${index} says ${'something '.repeat(index % 17)}plainly.${index % 9 === 8 ? '\n' : ''}`);
      }
      const text = sentences.join(' ');
      expect(await served!.send({ chatId: platform.dmChatId(user), recipient: user.id }, text)).toBe(true);
      const parts = sentTo(platform.dmChatId(user)).map((message) => message.text);
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
      const delivered = await platform.deliver({ chat: 'dm', from: user, text: 'remember that my locker is number 12' });
      await served!.settled();
      await platform.redeliver(delivered);
      await served!.settled();
      expect(sentTo(platform.dmChatId(user)).map((message) => message.text)).toEqual(['Noted: your locker is number 12']);
      const stored = await query<{ n: string }>(`select count(*) as n from messages where external_id = $1 and role = 'person' and person_id = $2`, [delivered.messageId, person.id]);
      expect(Number(stored[0]!.n)).toBe(1);
      const facts = await fixture.roster.memory.list({ agentId: fixture.agents.Scout.id, personId: person.id, audience: 'private' });
      expect(facts.map((fact) => fact.content)).toEqual(['my locker is number 12']);

      // A stranger's message is never stored, and its redelivery still gets the hint once.
      const other = stranger();
      const refused = await platform.deliver({ chat: 'dm', from: other, text: 'hi' });
      await served!.settled();
      await platform.redeliver(refused);
      await served!.settled();
      expect(sentTo(platform.dmChatId(other)).map((message) => message.text)).toEqual([pairingHint(prefix())]);
    });

    it('waits as long as a 429 asks, then sends', async () => {
      await serve();
      const { user } = await linked();
      platform.rateLimitNextSend(1);
      const answered = await say(user, 'remember that my bike is blue');
      expect(answered.map((message) => message.text)).toEqual(['Noted: your bike is blue']);
      const attempts = platform.attempts().filter((attempt) => attempt.chatId === platform.dmChatId(user));
      expect(attempts.map((attempt) => attempt.outcome)).toEqual(['rate-limited', 'sent']);
      expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950);
    });

    it('marks a person who blocked the bot unreachable, without failing the turn', async () => {
      await serve();
      const { user, person } = await linked(await fixture.roster.core.directory.addPerson({ name: `Blocker${++people}`, role: 'owner' }));
      const reach = async () =>
        (await query<{ unreachable: boolean }>('select unreachable_at is not null as unreachable from identities where channel = $1 and external_id = $2', [channel(), user.id]))[0]!.unreachable;
      const owners = async () => (await fixture.roster.core.directory.ownerIdentities(channel())).map((owner) => owner.externalId);
      expect(await reach()).toBe(false);
      expect(await owners()).toContain(user.id);

      platform.block(user);
      expect(await say(user, 'remember that my phone is off on Sundays')).toEqual([]);
      expect(platform.attempts().filter((attempt) => attempt.chatId === platform.dmChatId(user)).map((attempt) => attempt.outcome)).toEqual(['blocked']);
      expect(await reach()).toBe(true);
      expect(await owners()).not.toContain(user.id);
      // The turn itself went through: the message, the reply and the fact are kept.
      const facts = await fixture.roster.memory.list({ agentId: fixture.agents.Scout.id, personId: person.id, audience: 'private' });
      expect(facts.map((fact) => fact.content)).toEqual(['my phone is off on Sundays']);
      const kept = await query<{ role: string }>(
        `select m.role from messages m join conversations c on c.id = m.conversation_id where c.channel = $1 and c.person_id = $2 order by m.created_at`,
        [channel(), person.id],
      );
      expect(kept.map((row) => row.role)).toEqual(['person', 'agent']);

      // Writing again clears it.
      platform.unblock(user);
      expect((await say(user, 'what do you know about my phone?')).map((message) => message.text).join('\n')).toContain('your phone is off on Sundays');
      expect(await reach()).toBe(false);
    });

    it('answers every command', async () => {
      await serve();
      const { user, person } = await linked();
      const p = prefix();

      const help = await command(user, 'help');
      for (const name of ['agents', 'agent NAME', 'team', 'memory', 'forget WORDS', 'link CODE', 'help']) expect(help).toContain(`${p}${name}`);
      const agents = await command(user, 'agents');
      expect(agents).toContain('Scout — finds and checks sources (talking to it now)');
      expect(agents).toContain('Coder — writes code\n');

      expect(await command(user, 'agent Scout')).toBe('Now talking to Scout.');
      await say(user, 'remember that my bike is green');
      expect(await command(user, 'memory')).toBe('What Scout knows about you:\n- my bike is green');
      // What Scout knows is Scout's: Coder knows nothing of it.
      expect(await command(user, 'agent Coder')).toBe('Now talking to Coder.');
      expect(await command(user, 'memory')).toBe('Coder knows nothing about you yet.');
      expect(await command(user, 'team')).toBe(`Now talking to the team: Coder, Scout. Say ${p}agent NAME to talk to one.`);
      const team = (await say(user, 'hello')).map((message) => message.text);
      expect(team).toHaveLength(2);
      expect(team.some((text) => text.startsWith('Scout: '))).toBe(true);
      expect(team.some((text) => text.startsWith('Coder: '))).toBe(true);

      await command(user, 'agent Scout');
      expect(await command(user, 'forget my bike')).toBe('Scout forgot it.');
      expect(await command(user, 'memory')).toBe('Scout knows nothing about you yet.');
      const tombstones = await query<{ n: string }>('select count(*) as n from tombstones where person_id = $1', [person.id]);
      expect(Number(tombstones[0]!.n)).toBe(1);

      // /link ties a second handle to the same person, who is then known there.
      const { code } = await fixture.roster.core.directory.createLinkCode(person.id);
      const second = stranger();
      expect(await command(second, `link ${code}`)).toBe(`Linked: you are ${person.name} here now.`);
      expect(await fixture.roster.core.directory.personByIdentity(channel(), second.id)).toEqual(person);
      expect(await command(second, `link ${code}`)).toBe('That link code is unknown, used or expired. Ask the owner for a new one.');
    });

    it('answers nothing to a sender the policy refuses, beyond the pairing hint', async () => {
      await serve();
      const directory = fixture.roster.core.directory;
      const before = await query<{ n: string }>('select count(*) as n from messages', []);
      // Under pairing (the default, no binding): the hint, to whatever a stranger sends (an image too), and nothing is kept.
      const user = stranger();
      await say(user, 'remember that my pin is 4321');
      await command(user, 'agents');
      await command(user, 'memory');
      await platform.deliver({ chat: 'dm', from: user, text: '', image: true });
      await served!.settled();
      expect(sentTo(platform.dmChatId(user)).map((message) => message.text)).toEqual([pairingHint(prefix()), pairingHint(prefix()), pairingHint(prefix()), pairingHint(prefix())]);
      expect(await query('select 1 from conversations where channel = $1 and external_id like $2', [channel(), `%${platform.dmChatId(user)}%`])).toEqual([]);
      const after = await query<{ n: string }>('select count(*) as n from messages', []);
      expect(after[0]!.n).toBe(before[0]!.n);
      expect(await query(`select 1 from facts where content like '%4321%'`, [])).toEqual([]);

      // Under allowlist: nothing at all, while a linked person beside them is answered.
      await directory.bindChannel({ channel: channel(), account: platform.adapter.account, agent: 'Scout', policy: 'allowlist', allowlist: [] });
      try {
        const refused = stranger();
        const { user: friend } = await linked();
        await platform.deliver({ chat: 'dm', from: refused, text: 'hello?' });
        await command(refused, 'help');
        await command(friend, 'agent Scout');
        expect(sentTo(platform.dmChatId(friend)).map((message) => message.text)).toEqual(['Now talking to Scout.']);
        expect(sentTo(platform.dmChatId(refused))).toEqual([]);
        // A linked person's image reaches the agent; on an engine that reads no images, it says so plainly.
        await platform.deliver({ chat: 'dm', from: friend, text: '', image: true });
        await served!.settled();
        expect(sentTo(platform.dmChatId(friend)).at(-1)!.text).toBe('I cannot read images here, only text: say it in words, please.');
      } finally {
        await bindToScout();
      }
    });

    it('answers a stranger under the open policy as a guest, with no memory and no memory tools, and remembers a linked person there', async () => {
      await serve();
      const directory = fixture.roster.core.directory;
      await directory.bindChannel({ channel: channel(), account: platform.adapter.account, agent: 'Scout', policy: 'open' });
      try {
        const count = async (table: string) => Number((await query<{ n: string }>(`select count(*) as n from ${table}`, []))[0]!.n);
        const [facts, learned] = [await count('facts'), await count('learning_events')];
        const guest = stranger();
        // The agent answers, without its memory tools: it says it cannot keep anything here, and keeps nothing.
        const cannot = `I'm Scout. I can't keep memories in this conversation.`;
        expect((await say(guest, 'remember that my plant is a fern')).map((message) => message.text)).toEqual([cannot]);
        expect((await say(guest, 'what do you know about my plant?')).map((message) => message.text)).toEqual([cannot]);
        expect(await command(guest, 'memory')).toBe(`No memory is kept for you here: this handle is not linked to a person. Ask the owner for a link code, then send ${prefix()}link CODE.`);
        expect(await count('facts')).toBe(facts);
        expect(await count('learning_events')).toBe(learned);
        expect(await query(`select 1 from facts where content like '%fern%'`, [])).toEqual([]);
        // A guest stays no one: no person, no identity.
        expect(await directory.personByIdentity(channel(), guest.id)).toBeNull();
        expect(await query('select 1 from identities where channel = $1 and external_id = $2', [channel(), guest.id])).toEqual([]);

        // Positive control: a linked person on the same binding is remembered, and recalled in a new message.
        const { user, person } = await linked();
        expect((await say(user, 'remember that my plant is a fern')).map((message) => message.text)).toEqual(['Noted: your plant is a fern']);
        expect((await say(user, 'what do you know about my plant?')).map((message) => message.text)).toEqual(['- your plant is a fern']);
        const kept = await fixture.roster.memory.list({ agentId: fixture.agents.Scout.id, personId: person.id, audience: 'private' });
        expect(kept.map((fact) => fact.content)).toEqual(['my plant is a fern']);
        expect(await count('facts')).toBe(facts + 1);
        expect(await count('learning_events')).toBeGreaterThan(learned);
        // The guest still gets nothing of it.
        expect((await say(guest, 'what do you know about my plant?')).map((message) => message.text)).toEqual([cannot]);
      } finally {
        await bindToScout();
      }
    });

    it('pushes pending approvals to the owner with buttons, and only the owner decides', async () => {
      const directory = fixture.roster.core.directory;
      const { user: owner } = await linked(fixture.owner);
      const { user: member } = await linked();
      const text = `When someone asks for sources, give at least two and say how each was checked. ${'Prefer primary sources. '.repeat(20)}`.trim();
      const [approval] = await query<{ id: string }>(
        `insert into approvals (agent_id, text, proposed_by_kind, proposed_by) values ($1, $2, 'agent', 'Scout') returning id`,
        [fixture.agents.Scout.id, text],
      );
      await serve({ approvals: createApprovalDesk(fixture.test.database, fixture.roster.memory.audit, directory), approvalPollMs: 60_000 });
      await until(() => sentTo(platform.dmChatId(owner)).length > 0, 'the approval to reach the owner');
      const pushed = sentTo(platform.dmChatId(owner));
      expect(pushed.map((message) => message.text).join('\n')).toContain(text);
      const withButtons = pushed.at(-1)!;
      expect(withButtons.buttons).toEqual([
        { approvalId: approval!.id, decision: 'approve' },
        { approvalId: approval!.id, decision: 'reject' },
      ]);
      expect(sentTo(platform.dmChatId(member))).toEqual([]);

      await platform.press(member, withButtons, 'approve');
      await until(() => platform.pressAnswers().length === 1, 'the answer to the member');
      expect(platform.pressAnswers()[0]).toBe('Only the owner decides on this; nothing changed.');
      expect(await listLessons(fixture.test.database, fixture.agents.Scout.id)).toEqual([]);

      await platform.press(owner, withButtons, 'approve');
      await until(() => platform.pressAnswers().length === 2, 'the answer to the owner');
      expect(platform.pressAnswers()[1]).toBe(`Approved by ${fixture.owner.name}: the lesson now rides in every prompt of Scout.`);
      expect((await listLessons(fixture.test.database, fixture.agents.Scout.id)).map((lesson) => lesson.text)).toEqual([text]);
      // Pushed once: a second look finds nothing new to send.
      expect(await served!.pushApprovals()).toBe(0);
    });

    it('holds each sender to the rate limit: one word to a person it knows, nothing more to a stranger', async () => {
      await serve({ rateLimit: { messages: 2, windowMs: 60_000 } });
      const { user } = await linked();
      for (const topic of ['tea', 'coffee', 'water', 'juice']) await say(user, `what do you know about ${topic}?`);
      expect(sentTo(platform.dmChatId(user)).map((message) => message.text)).toEqual([
        "I don't know anything about tea yet.",
        "I don't know anything about coffee yet.",
        'You are writing faster than I can answer: wait a minute, then go on.',
      ]);
      const other = stranger();
      for (const topic of ['tea', 'coffee', 'water']) await say(other, `what do you know about ${topic}?`);
      expect(sentTo(platform.dmChatId(other)).map((message) => message.text)).toEqual([pairingHint(prefix()), pairingHint(prefix())]);
      // One sender's limit holds no one else up.
      const { user: third } = await linked();
      expect((await say(third, 'what do you know about tea?')).map((message) => message.text)).toEqual(["I don't know anything about tea yet."]);
    });

    it('shows typing to a person it knows while the agents answer, where the platform can', async () => {
      await serve();
      const { user } = await linked();
      await say(user, 'remember that my train leaves at six');
      expect(platform.typing()).toEqual([]);
      await say(user, 'what do you know about my train?');
      if (platform.adapter.capabilities.typing) await until(() => platform.typing().includes(platform.dmChatId(user)), 'the typing indicator');
      else expect(platform.typing()).toEqual([]);
      // A stranger is never shown typing.
      const other = stranger();
      await say(other, 'hello');
      expect(platform.typing()).not.toContain(platform.dmChatId(other));
    });
  });
}
