/** Conformance cases on people: commands, policies, guests, approvals, rate limits and typing. */
import { pairingHint } from '@roster/core';
import { createApprovalDesk, listLessons } from '@roster/learning';
import { expect, it } from 'vitest';
import { until } from '@roster/channels/testing';
import type { ConformanceContext } from './context.js';

export function policyCases(context: ConformanceContext): void {
  const { channel, prefix, stranger, linked, bindToScout, serve, sentTo, say, command, query } = context;

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
    const { code } = await context.fixture.roster.core.directory.createLinkCode(person.id);
    const second = stranger();
    expect(await command(second, `link ${code}`)).toBe(`Linked: you are ${person.name} here now.`);
    expect(await context.fixture.roster.core.directory.personByIdentity(channel(), second.id)).toEqual(person);
    expect(await command(second, `link ${code}`)).toBe('That link code is unknown, used or expired. Ask the owner for a new one.');
  });

  it('answers nothing to a sender the policy refuses, beyond the pairing hint', async () => {
    await serve();
    const directory = context.fixture.roster.core.directory;
    const before = await query<{ n: string }>('select count(*) as n from messages', []);
    // Under pairing (the default, no binding): the hint, to whatever a stranger sends (an image too), and nothing is kept.
    const user = stranger();
    await say(user, 'remember that my pin is 4321');
    await command(user, 'agents');
    await command(user, 'memory');
    await context.platform.deliver({ chat: 'dm', from: user, text: '', image: true });
    await context.served!.settled();
    expect(sentTo(context.platform.dmChatId(user)).map((message) => message.text)).toEqual([pairingHint(prefix()), pairingHint(prefix()), pairingHint(prefix()), pairingHint(prefix())]);
    expect(await query('select 1 from conversations where channel = $1 and external_id like $2', [channel(), `%${context.platform.dmChatId(user)}%`])).toEqual([]);
    const after = await query<{ n: string }>('select count(*) as n from messages', []);
    expect(after[0]!.n).toBe(before[0]!.n);
    expect(await query(`select 1 from facts where content like '%4321%'`, [])).toEqual([]);

    // Under allowlist: nothing at all, while a linked person beside them is answered.
    await directory.bindChannel({ channel: channel(), account: context.platform.adapter.account, agent: 'Scout', policy: 'allowlist', allowlist: [] });
    try {
      const refused = stranger();
      const { user: friend } = await linked();
      await context.platform.deliver({ chat: 'dm', from: refused, text: 'hello?' });
      await command(refused, 'help');
      await command(friend, 'agent Scout');
      expect(sentTo(context.platform.dmChatId(friend)).map((message) => message.text)).toEqual(['Now talking to Scout.']);
      expect(sentTo(context.platform.dmChatId(refused))).toEqual([]);
      // A linked person's image reaches the agent; on an engine that reads no images, it says so plainly.
      await context.platform.deliver({ chat: 'dm', from: friend, text: '', image: true });
      await context.served!.settled();
      expect(sentTo(context.platform.dmChatId(friend)).at(-1)!.text).toBe('I cannot read images here, only text: say it in words, please.');
    } finally {
      await bindToScout();
    }
  });

  it('answers a stranger under the open policy as a guest, with no memory and no memory tools, and remembers a linked person there', async () => {
    await serve();
    const directory = context.fixture.roster.core.directory;
    await directory.bindChannel({ channel: channel(), account: context.platform.adapter.account, agent: 'Scout', policy: 'open' });
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
      const kept = await context.fixture.roster.memory.list({ agentId: context.fixture.agents.Scout.id, personId: person.id, audience: 'private' });
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
    const directory = context.fixture.roster.core.directory;
    const { user: owner } = await linked(context.fixture.owner);
    const { user: member } = await linked();
    const text = `When someone asks for sources, give at least two and say how each was checked. ${'Prefer primary sources. '.repeat(20)}`.trim();
    const [approval] = await query<{ id: string }>(
      `insert into approvals (agent_id, text, proposed_by_kind, proposed_by) values ($1, $2, 'agent', 'Scout') returning id`,
      [context.fixture.agents.Scout.id, text],
    );
    await serve({ approvals: createApprovalDesk(context.fixture.test.database, context.fixture.roster.memory.audit, directory), approvalPollMs: 60_000 });
    await until(() => sentTo(context.platform.dmChatId(owner)).length > 0, 'the approval to reach the owner');
    const pushed = sentTo(context.platform.dmChatId(owner));
    expect(pushed.map((message) => message.text).join('\n')).toContain(text);
    const withButtons = pushed.at(-1)!;
    expect(withButtons.buttons).toEqual([
      { approvalId: approval!.id, decision: 'approve' },
      { approvalId: approval!.id, decision: 'reject' },
    ]);
    expect(sentTo(context.platform.dmChatId(member))).toEqual([]);

    await context.platform.press(member, withButtons, 'approve');
    await until(() => context.platform.pressAnswers().length === 1, 'the answer to the member');
    expect(context.platform.pressAnswers()[0]).toBe('Only the owner decides on this; nothing changed.');
    expect(await listLessons(context.fixture.test.database, context.fixture.agents.Scout.id)).toEqual([]);

    await context.platform.press(owner, withButtons, 'approve');
    await until(() => context.platform.pressAnswers().length === 2, 'the answer to the owner');
    expect(context.platform.pressAnswers()[1]).toBe(`Approved by ${context.fixture.owner.name}: the lesson now rides in every prompt of Scout.`);
    expect((await listLessons(context.fixture.test.database, context.fixture.agents.Scout.id)).map((lesson) => lesson.text)).toEqual([text]);
    // Pushed once: a second look finds nothing new to send.
    expect(await context.served!.pushApprovals()).toBe(0);
  });

  it('holds each sender to the rate limit: one word to a person it knows, nothing more to a stranger', async () => {
    await serve({ rateLimit: { messages: 2, windowMs: 60_000 } });
    const { user } = await linked();
    for (const topic of ['tea', 'coffee', 'water', 'juice']) await say(user, `what do you know about ${topic}?`);
    expect(sentTo(context.platform.dmChatId(user)).map((message) => message.text)).toEqual([
      "I don't know anything about tea yet.",
      "I don't know anything about coffee yet.",
      'You are writing faster than I can answer: wait a minute, then go on.',
    ]);
    const other = stranger();
    for (const topic of ['tea', 'coffee', 'water']) await say(other, `what do you know about ${topic}?`);
    expect(sentTo(context.platform.dmChatId(other)).map((message) => message.text)).toEqual([pairingHint(prefix()), pairingHint(prefix())]);
    // One sender's limit holds no one else up.
    const { user: third } = await linked();
    expect((await say(third, 'what do you know about tea?')).map((message) => message.text)).toEqual(["I don't know anything about tea yet."]);
  });

  it('shows typing to a person it knows while the agents answer, where the platform can', async () => {
    await serve();
    const { user } = await linked();
    await say(user, 'remember that my train leaves at six');
    expect(context.platform.typing()).toEqual([]);
    await say(user, 'what do you know about my train?');
    if (context.platform.adapter.capabilities.typing) await until(() => context.platform.typing().includes(context.platform.dmChatId(user)), 'the typing indicator');
    else expect(context.platform.typing()).toEqual([]);
    // A stranger is never shown typing.
    const other = stranger();
    await say(other, 'hello');
    expect(context.platform.typing()).not.toContain(context.platform.dmChatId(other));
  });
}
