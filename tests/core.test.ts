import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { createRuntime } from '@roster/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { agentOf, startFakeOpenAi, type FakeRequest } from './support/fake-openai.js';
import { rosterFixture, type RosterFixture } from './support/roster-runtime.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function fixture(agents: Array<{ name: string; engine?: string }> = [{ name: 'Scout' }]): Promise<RosterFixture> {
  const f = await rosterFixture({ agents, people: ['Ada', 'Bob'] });
  cleanups.push(() => f.cleanup());
  return f;
}

async function count(f: RosterFixture, table: string): Promise<number> {
  return f.database.adminScope('test: count rows', async (tx) => Number((await tx.query<{ n: string }>(`select count(*) as n from ${table}`)).rows[0]!.n));
}

async function bind(f: RosterFixture, policy: 'pairing' | 'allowlist' | 'open', allowlist: string[] = []) {
  await f.database.adminScope('test: bind a telegram bot', (tx) =>
    tx.query(`insert into channel_bindings (channel, account, agent_id, policy, allowlist) values ('telegram', 'bot', $1, $2, $3)`, [f.agents.Scout!.id, policy, allowlist]),
  );
}

const fromTelegram = (externalId: string, text: string, messageId?: string) => ({
  channel: 'telegram' as const,
  account: 'bot',
  conversation: { externalId: `chat-${externalId}`, kind: 'dm' as const },
  sender: { externalId },
  ...(messageId === undefined ? {} : { externalMessageId: messageId }),
  text,
});

describe('strangers and access', () => {
  it('answers a stranger on an open binding with no memory and no memory tools, and keeps nothing', async () => {
    const f = await fixture();
    await bind(f, 'open');
    const result = await f.roster.core.handle(fromTelegram('tg-999', 'remember that I am the boss'));
    expect(result.person).toBeNull();
    expect(result.replies).toEqual([expect.objectContaining({ agent: 'Scout', text: "I'm Scout. I can't keep memories in this conversation.", toolCalls: [] })]);
    expect(await count(f, 'facts')).toBe(0);
    expect(await count(f, 'learning_events')).toBe(0);
    // Positive control: a known person on the same binding is remembered.
    await f.roster.core.directory.linkIdentity(f.people.Ada!.id, 'telegram', 'tg-1', 'ada');
    const known = await f.roster.core.handle(fromTelegram('tg-1', 'remember that I am the boss'));
    expect(known.replies[0]?.text).toBe('Noted: you are the boss');
    expect(await count(f, 'facts')).toBe(1);
  });

  it('pairs a stranger through a single-use link code, and refuses a handle tied to someone else', async () => {
    const f = await fixture();
    await bind(f, 'pairing');
    const stranger = await f.roster.core.handle(fromTelegram('tg-7', 'hello'));
    expect(stranger).toMatchObject({ replies: [], notice: expect.stringMatching(/link code/) });

    const { code, expiresAt } = await f.roster.core.directory.createLinkCode(f.people.Ada!.id);
    expect(code).toMatch(/^[A-Z2-9]{8}$/);
    expect(expiresAt.getTime() - Date.now()).toBeGreaterThan(59 * 60 * 1000);
    const linked = await f.roster.core.handle(fromTelegram('tg-7', `/link ${code}`));
    expect(linked.notice).toBe('Linked: you are Ada here now.');
    const after = await f.roster.core.handle(fromTelegram('tg-7', 'remember that my desk is by the window'));
    expect(after.person?.name).toBe('Ada');
    expect(after.replies[0]?.text).toBe('Noted: your desk is by the window');

    // Single use: the same code does nothing for another handle.
    const reused = await f.roster.core.handle(fromTelegram('tg-8', `/link ${code}`));
    expect(reused.notice).toMatch(/unknown, used or expired/);
    // No silent merge: Ada's handle cannot become Bob's.
    const bobCode = await f.roster.core.directory.createLinkCode(f.people.Bob!.id);
    await expect(f.roster.core.directory.redeemLinkCode(bobCode.code, 'telegram', 'tg-7')).rejects.toMatchObject({ code: 'identity_taken' });
  });

  it('limits pending link codes to three and expires them after an hour', async () => {
    const f = await fixture();
    const codes: Array<{ code: string; expiresAt: Date }> = [];
    for (let i = 0; i < 3; i += 1) codes.push(await f.roster.core.directory.createLinkCode(f.people.Bob!.id));
    await expect(f.roster.core.directory.createLinkCode(f.people.Bob!.id)).rejects.toMatchObject({ code: 'link_codes_exhausted' });
    await f.database.adminScope('test: age a code past its hour', (tx) =>
      tx.query(`update link_codes set expires_at = now() - interval '1 second' where code = $1`, [codes[0]!.code]),
    );
    await expect(f.roster.core.directory.redeemLinkCode(codes[0]!.code, 'slack', 'U1')).rejects.toMatchObject({ code: 'link_code_invalid' });
    // The expired one no longer counts as pending.
    await expect(f.roster.core.directory.createLinkCode(f.people.Bob!.id)).resolves.toMatchObject({ code: expect.any(String) });
    await expect(f.roster.core.directory.redeemLinkCode(codes[1]!.code, 'slack', 'U1')).resolves.toMatchObject({ name: 'Bob' });
  });

  it('lets only listed handles in on an allowlist binding', async () => {
    const f = await fixture();
    await bind(f, 'allowlist', ['tg-listed']);
    const listed = await f.roster.core.handle(fromTelegram('tg-listed', 'hi'));
    expect(listed.replies).toHaveLength(1);
    const other = await f.roster.core.handle(fromTelegram('tg-other', 'hi'));
    expect(other).toMatchObject({ replies: [], notice: null });
  });
});

describe('delivery', () => {
  it('processes a redelivered platform message once', async () => {
    const f = await fixture();
    await f.roster.core.directory.linkIdentity(f.people.Ada!.id, 'telegram', 'tg-1');
    await bind(f, 'pairing');
    const first = await f.roster.core.handle(fromTelegram('tg-1', 'remember that I take the 8:10 train', '42'));
    const again = await f.roster.core.handle(fromTelegram('tg-1', 'remember that I take the 8:10 train', '42'));
    expect(first).toMatchObject({ duplicate: false, replies: [expect.objectContaining({ text: 'Noted: you take the 8:10 train' })] });
    expect(again).toMatchObject({ duplicate: true, replies: [], messageId: first.messageId });
    expect(await count(f, 'messages')).toBe(2);
    expect(await count(f, 'memory_events')).toBe(1);
    // A different message id is a new message.
    const next = await f.roster.core.handle(fromTelegram('tg-1', 'what do you know about train', '43'));
    expect(next.replies[0]?.text).toBe('- you take the 8:10 train');
  });

  it('answers a redelivered message whose first turn was cut off before its reply, once; an answered one stays a duplicate', async () => {
    // The model never answers the first process (it is killed while the model thinks); it answers the next one.
    let asked = 0;
    let thinking: () => void = () => undefined;
    const cutOff = new Promise<void>((resolve) => (thinking = resolve));
    const fake = await startFakeOpenAi(async () => {
      asked += 1;
      if (asked === 1) {
        thinking();
        await new Promise(() => undefined);
      }
      return { text: 'The 8:10 train, noted.' };
    });
    const f = await fixture([{ name: 'Scout', engine: fake.engine } as { name: string }]);
    // Closed after the database (cleanups run last first): the first process's turn never stores anything.
    cleanups.unshift(() => fake.close());
    await f.roster.core.directory.linkIdentity(f.people.Ada!.id, 'telegram', 'tg-1');
    await bind(f, 'pairing');
    void f.roster.core.handle(fromTelegram('tg-1', 'I take the 8:10 train', '42')).catch(() => undefined);
    await cutOff;
    // Stored, not answered; the dead process's turn of the conversation lapses (120 s, here at once).
    expect(await count(f, 'messages')).toBe(1);
    await f.database.adminScope('test: the killed process’s turn lapses', (tx) => tx.query(`update conversations set turn_expires_at = now() - interval '1 second'`));

    // Another process gets the message again from the platform, never told it was handled: it answers it, as the same message.
    const next = await createRuntime({ config: parseConfig({}), database: f.database, key: testInstallationKey });
    const again = await next.core.handle(fromTelegram('tg-1', 'I take the 8:10 train', '42'));
    expect(again).toMatchObject({ duplicate: false, replies: [expect.objectContaining({ text: 'The 8:10 train, noted.' })] });
    expect(await count(f, 'messages')).toBe(2);
    // Answered once: a third delivery is a duplicate, with nothing said or stored (the control).
    const third = await next.core.handle(fromTelegram('tg-1', 'I take the 8:10 train', '42'));
    expect(third).toMatchObject({ duplicate: true, replies: [], messageId: again.messageId });
    expect(await count(f, 'messages')).toBe(2);
    expect(asked).toBe(2);
  });

  it('handles the messages of one conversation in order', async () => {
    const f = await fixture();
    const ada = f.people.Ada!.id;
    const say = (text: string) => f.roster.core.handle({ channel: 'cli', conversation: { externalId: 'ordered', kind: 'dm' }, sender: { personId: ada }, text }, { agent: 'Scout' });
    const [, , recall] = await Promise.all([say('remember that the code word is otter'), say('update: the code word is heron'), say('what do you know about code word')]);
    expect(recall.replies[0]?.text).toBe('- the code word is heron');
  });

  it('refuses bad input with a clear error and stores nothing', async () => {
    const f = await fixture();
    const ada = f.people.Ada!.id;
    for (const text of ['', '   ', 'nul\u0000', 'x'.repeat(16_001)]) {
      await expect(
        f.roster.core.handle({ channel: 'cli', conversation: { externalId: 'bad', kind: 'dm' }, sender: { personId: ada }, text }, { agent: 'Scout' }),
      ).rejects.toMatchObject({ code: expect.stringMatching(/invalid/) });
    }
    expect(await count(f, 'messages')).toBe(0);
  });

  it('redacts secrets before the message is stored', async () => {
    const f = await fixture();
    await f.roster.core.handle(
      { channel: 'cli', conversation: { externalId: 'secret', kind: 'dm' }, sender: { personId: f.people.Ada!.id }, text: 'the wifi password=otter-river-42 works' },
      { agent: 'Scout' },
    );
    const stored = await f.database.adminScope('test: read messages', async (tx) => (await tx.query<{ content: string }>(`select content from messages where role = 'person'`)).rows);
    expect(stored).toEqual([{ content: 'the wifi password=[redacted:password] works' }]);
  });
});

describe('prompts and colleagues', () => {
  it('keeps the prompt prefix byte-identical from turn to turn while memory and history change', async () => {
    const fake = await startFakeOpenAi(() => ({ text: 'ok' }));
    cleanups.push(() => fake.close());
    const f = await fixture([{ name: 'Scout', engine: fake.engine } as { name: string }]);
    const scope = { agentId: f.agents.Scout!.id, personId: f.people.Ada!.id, audience: 'private' as const };
    await f.roster.memory.remember(scope, { content: 'Ada likes sailing', provenance: { actor: { kind: 'person', id: f.people.Ada!.id } } });
    const say = (text: string) =>
      f.roster.core.handle({ channel: 'cli', conversation: { externalId: 'cache', kind: 'dm' }, sender: { personId: f.people.Ada!.id }, text }, { agent: 'Scout' });
    await say('hello there');
    await say('what about sailing?');
    const [first, second] = fake.requests as [FakeRequest, FakeRequest];
    expect(first.system[0]).toBe(second.system[0]);
    expect(first.system[0]).toMatch(/^You are Scout, an agent in a Roster wallet\. Your job: the Scout job/);
    expect(first.system[0]).not.toMatch(/Ada|sailing/);
    expect(JSON.stringify(second.messages)).toContain('Ada likes sailing');
    expect(second.messages.length).toBeGreaterThan(first.messages.length);
  });

  it("lets a colleague answer only from its agent-wide knowledge, never another person's private facts", async () => {
    let colleagueSaw = '';
    const fake = await startFakeOpenAi((request) => {
      const agent = agentOf(request);
      if (agent === 'Scout' && request.toolResults.length === 0) return { tool: 'ask_agent', input: { agent: 'Coder', question: 'what is the build server called?' } };
      if (agent === 'Coder') {
        colleagueSaw = JSON.stringify(request.messages);
        return { text: 'I only know general things.' };
      }
      return { text: 'done' };
    });
    cleanups.push(() => fake.close());
    const f = await fixture([{ name: 'Scout', engine: fake.engine }, { name: 'Coder', engine: fake.engine }]);
    const coderBob = { agentId: f.agents.Coder!.id, personId: f.people.Bob!.id, audience: 'private' as const };
    await f.roster.memory.remember(coderBob, { content: 'Bob is job hunting quietly', provenance: { actor: { kind: 'person', id: f.people.Bob!.id } } });
    await f.roster.memory.remember(coderBob, { content: 'The build server is called kiln', audience: 'agent', provenance: { actor: { kind: 'person', id: f.people.Bob!.id } } });

    const result = await f.roster.core.handle(
      { channel: 'cli', conversation: { externalId: 'colleague', kind: 'dm' }, sender: { personId: f.people.Ada!.id }, text: 'ask Coder about the build server' },
      { agent: 'Scout' },
    );
    expect(result.replies[0]?.toolCalls[0]).toMatchObject({ toolName: 'ask_agent', output: { agent: 'Coder', answer: 'I only know general things.' } });
    expect(colleagueSaw).toContain('kiln');
    expect(colleagueSaw).not.toContain('job hunting');
  });
});

describe('memory in a group', () => {
  it('keeps nothing private said in a group, and says where to say it; the same words one to one are kept', async () => {
    const f = await fixture();
    const group = await f.roster.core.handle({ channel: 'cli', conversation: { externalId: 'team-room', kind: 'group' }, sender: { personId: f.people.Ada!.id }, text: 'remember that my desk is by the window' });
    expect(group.replies[0]?.text).toMatch(/In a group nothing private is kept: tell me in a one-to-one conversation\.$/);
    expect(group.replies[0]?.text).not.toMatch(/row-level security/);
    const count = () => f.database.adminScope('test: count facts', async (tx) => Number((await tx.query<{ n: string }>('select count(*) as n from facts')).rows[0]!.n));
    expect(await count()).toBe(0);
    const dm = await f.roster.core.handle({ channel: 'cli', conversation: { externalId: 'ada-dm', kind: 'dm' }, sender: { personId: f.people.Ada!.id }, text: 'remember that my desk is by the window' });
    expect(dm.replies[0]?.text).toBe('Noted: your desk is by the window');
    expect(await count()).toBe(1);
  });
});

describe('archive and purge', () => {
  it('keeps an archived agent’s memory until a confirmed purge, which forgets it with tombstones and events', async () => {
    const f = await fixture();
    const scope = { agentId: f.agents.Scout!.id, personId: f.people.Ada!.id, audience: 'private' as const };
    await f.roster.memory.remember(scope, { content: 'Ada owns a red kayak', provenance: { actor: { kind: 'person', id: f.people.Ada!.id } } });
    await f.roster.core.directory.archiveAgent('Scout');
    expect((await f.roster.memory.list(scope)).map((fact) => fact.content)).toEqual(['Ada owns a red kayak']);
    await expect(f.roster.core.purgeAgent('Scout', 'scout')).rejects.toMatchObject({ code: 'purge_unconfirmed' });
    expect(await f.roster.core.purgeAgent('Scout', 'Scout')).toMatchObject({ facts: 1 });
    expect(await f.roster.memory.list(scope)).toEqual([]);
    expect(await count(f, 'tombstones')).toBe(1);
    const actions = await f.database.adminScope('test: actions', async (tx) => (await tx.query<{ action: string }>('select action from memory_events order by seq')).rows.map((row) => row.action));
    expect(actions).toEqual(['remember', 'forget', 'purge']);
  });
});

describe('what a turn writes beside its reply', () => {
  const eventsOf = (f: RosterFixture, action: string) =>
    f.database.adminScope('test: read audit events', async (tx) => {
      const { rows } = await tx.query<{ target_id: string; actor_kind: string; actor_id: string | null; reason: string | null }>(
        `select target_id, actor_kind, actor_id, detail->>'reason' as reason from memory_events where action = $1 order by seq`,
        [action],
      );
      return rows;
    });
  const factRow = (f: RosterFixture, content: string) =>
    f.database.adminScope('test: read a fact', async (tx) => {
      const { rows } = await tx.query<{ id: string; uses: number; last_used_at: Date | null }>('select id, uses, last_used_at from facts where content = $1', [content]);
      return rows[0]!;
    });

  it('stores a remembered fact with its vector and event, and a recall’s uses with their events, each chain link whole', async () => {
    const f = await fixture();
    await f.roster.core.directory.linkIdentity(f.people.Ada!.id, 'telegram', 'tg-1', 'ada');
    await bind(f, 'pairing');
    const said = await f.roster.core.handle(fromTelegram('tg-1', 'remember that my locker number is 4418'));
    expect(said.replies[0]?.toolCalls.map((call) => call.toolName)).toEqual(['remember']);
    const locker = await factRow(f, 'my locker number is 4418');
    expect(await f.learningEvents()).toEqual(['Scout/Ada/remember']);
    expect(await eventsOf(f, 'remember')).toEqual([expect.objectContaining({ target_id: locker.id, actor_kind: 'person' })]);
    const vectors = await f.database.adminScope('test: read vectors', async (tx) =>
      (await tx.query<{ searchable: boolean }>('select searchable from fact_embeddings where fact_id = $1', [locker.id])).rows,
    );
    expect(vectors).toEqual([{ searchable: true }]);

    // Plain talk uses nothing (the control).
    await f.roster.core.handle(fromTelegram('tg-1', 'hello there'));
    expect(await factRow(f, 'my locker number is 4418')).toMatchObject({ uses: 0, last_used_at: null });
    expect(await eventsOf(f, 'use')).toEqual([]);

    const asked = await f.roster.core.handle(fromTelegram('tg-1', 'what do you know about my locker?'));
    expect(asked.replies[0]?.toolCalls.map((call) => call.toolName)).toEqual(['recall']);
    expect(asked.replies[0]?.text).toContain('4418');
    expect(await factRow(f, 'my locker number is 4418')).toMatchObject({ uses: 1, last_used_at: expect.any(Date) });
    expect(await eventsOf(f, 'use')).toEqual([{ target_id: locker.id, actor_kind: 'agent', actor_id: 'Scout', reason: 'recall' }]);
    await f.roster.core.handle(fromTelegram('tg-1', 'what do you know about my locker?'));
    expect(await factRow(f, 'my locker number is 4418')).toMatchObject({ uses: 2 });
    expect(await eventsOf(f, 'use')).toHaveLength(2);
    expect(await f.roster.memory.audit.verify()).toEqual([expect.objectContaining({ agentId: f.agents.Scout!.id, ok: true, events: 3 })]);
  });
  it('counts the uses of what is still readable when a recalled fact is rejected before the reply is stored', async () => {
    let rejectFirst: (() => Promise<unknown>) | null = null;
    const fake = await startFakeOpenAi(async (request) => {
      if (request.toolResults.length === 0) return { tool: 'recall', input: { query: 'locker' } };
      // Between the recall and the reply: the person rejects one of the facts the agent recalled.
      await rejectFirst?.();
      return { text: 'done' };
    });
    cleanups.push(() => fake.close());
    const f = await fixture([{ name: 'Scout', engine: fake.engine }]);
    const scope = { agentId: f.agents.Scout!.id, personId: f.people.Ada!.id, audience: 'private' as const };
    const ada = { actor: { kind: 'person' as const, id: f.people.Ada!.id } };
    const number = (await f.roster.memory.remember(scope, { content: 'my locker number is 4418', provenance: ada })).fact;
    const place = (await f.roster.memory.remember(scope, { content: 'my locker is in the north gym', provenance: ada })).fact;
    const ask = () => f.roster.core.handle({ channel: 'cli', conversation: { externalId: 'ada-dm', kind: 'dm' }, sender: { personId: f.people.Ada!.id }, text: 'where is my locker?' });
    const uses = async () => [(await factRow(f, number.content!)).uses, (await factRow(f, place.content!)).uses];

    // Nothing changes between recall and reply (the control): both are used, each with its event.
    await ask();
    expect(await uses()).toEqual([1, 1]);
    expect((await eventsOf(f, 'use')).map((event) => event.target_id).sort()).toEqual([number.id, place.id].sort());

    rejectFirst = () => f.roster.memory.reject(scope, place.id, ada);
    await ask();
    expect(await uses()).toEqual([2, 1]);
    const events = await eventsOf(f, 'use');
    expect(events).toHaveLength(3);
    expect(events.at(-1)).toMatchObject({ target_id: number.id, actor_kind: 'agent', actor_id: 'Scout', reason: 'recall' });
    expect(await f.roster.memory.audit.verify()).toEqual([expect.objectContaining({ agentId: f.agents.Scout!.id, ok: true })]);
  });
});
