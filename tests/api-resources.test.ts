import { randomUUID } from 'node:crypto';
import type { Person } from '@roster/core';
import { handlers, runAsJob } from '@roster/jobs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ada, answeredNoStack, answers, bob, call, expectError, member, owner, server, useApiServer } from './support/api-suite.js';

/**
 * The HTTP API through its public door, requests injected as a browser or a
 * script would send them (tests/support/api-suite.ts). Every answer is
 * checked for a stack: none may carry one under the default configuration.
 * Here: memory, agents, people, lessons and the audit; the rest of the API
 * is in api.test.ts.
 */
useApiServer();

describe('memory', () => {
  let adaFact: string;
  let bobFact: string;

  beforeAll(async () => {
    const scout = await server.runtime.core.directory.agentByName('Scout');
    const remember = (person: Person, content: string) =>
      server.runtime.memory.remember({ agentId: scout.id, personId: person.id, audience: 'private' }, { content, provenance: { actor: { kind: 'person', id: person.id } } });
    adaFact = (await remember(ada, 'my sister is called Lia')).fact.id;
    bobFact = (await remember(bob, 'my cat is called Miso')).fact.id;
  });

  it('shows the owner every person’s group and a member only their own; another’s fact is not found', async () => {
    const all = (await call('GET', '/api/agents/Scout/memory', { as: owner })).json() as { groups: Array<{ person: { name: string } | null; facts: Array<{ content: string }> }> };
    expect(all.groups.map((group) => group.person?.name ?? null)).toEqual([null, 'Ada', 'Bob']);
    expect(all.groups.find((group) => group.person?.name === 'Ada')?.facts.map((fact) => fact.content)).toEqual(['my sister is called Lia']);

    const own = await call('GET', '/api/agents/Scout/memory?person=Ada', { as: member });
    expect(own.statusCode).toBe(200);
    expect(own.json()).toEqual({ groups: [{ person: { id: bob.id, name: 'Bob' }, facts: [expect.objectContaining({ id: bobFact, content: 'my cat is called Miso', trust: expect.any(String) })], tombstones: [] }] });
    expect(own.body).not.toContain('Lia');

    // Another person's fact: 404, for reading and for changing, and it is untouched.
    expectError(await call('GET', `/api/agents/Scout/facts/${adaFact}/history`, { as: member }), 404, 'fact_not_found');
    expectError(await call('POST', `/api/agents/Scout/facts/${adaFact}/forget`, { as: member }), 404, 'fact_not_found');
    expectError(await call('POST', `/api/agents/Scout/facts/${adaFact}/correct`, { as: member, body: { content: 'my sister is called Bea' } }), 404, 'fact_not_found');
    const history = await call('GET', `/api/agents/Scout/facts/${adaFact}/history`, { as: owner });
    expect(history.statusCode).toBe(200);
    expect((history.json() as { versions: Array<{ fact: { content: string } }> }).versions.map((version) => version.fact.content)).toEqual(['my sister is called Lia']);
    // Positive control: their own fact, the member reads and changes.
    const mine = await call('GET', `/api/agents/Scout/facts/${bobFact}/history`, { as: member });
    expect(mine.statusCode).toBe(200);
    expect(mine.json()).toMatchObject({ versions: [{ relation: 'this', fact: { id: bobFact }, event: { action: 'remember', actorKind: 'person', actorId: bob.id } }] });
  });

  it('corrects, updates, confirms and forgets through memory itself, with the versions to show for it', async () => {
    const corrected = await call('POST', `/api/agents/Scout/facts/${bobFact}/correct`, { as: member, body: { content: 'my cat is called Mochi' } });
    expect(corrected.statusCode).toBe(200);
    const { fact, retracted } = corrected.json() as { fact: { id: string; content: string }; retracted: { id: string; trust: string } };
    expect(fact.content).toBe('my cat is called Mochi');
    expect(retracted).toMatchObject({ id: bobFact, trust: 'retracted' });
    // Only the current version changes.
    expectError(await call('POST', `/api/agents/Scout/facts/${bobFact}/update`, { as: member, body: { content: 'my cat is called Tofu' } }), 409, 'fact_not_current');
    expect((await call('POST', `/api/agents/Scout/facts/${fact.id}/confirm`, { as: member })).json()).toMatchObject({ fact: { id: fact.id, trust: 'verified' } });
    const updated = await call('POST', `/api/agents/Scout/facts/${fact.id}/update`, { as: owner, body: { content: 'my cat is called Tofu' } });
    expect(updated.statusCode).toBe(200);
    const next = (updated.json() as { fact: { id: string } }).fact.id;
    const versions = (await call('GET', `/api/agents/Scout/facts/${next}/history`, { as: member })).json() as { versions: Array<{ relation: string; fact: { content: string | null; trust: string }; event: { action: string } | null }> };
    expect(versions.versions.map((version) => [version.relation, version.fact.content, version.event?.action])).toEqual([
      ['earlier', 'my cat is called Miso', 'remember'],
      ['earlier', 'my cat is called Mochi', 'correct'],
      ['this', 'my cat is called Tofu', 'update'],
    ]);
    // Too long is 413, and nothing changed.
    expectError(await call('POST', `/api/agents/Scout/facts/${next}/update`, { as: member, body: { content: 'x'.repeat(4001) } }), 413, 'memory_input_invalid');
    const forgotten = await call('POST', `/api/agents/Scout/facts/${next}/forget`, { as: member });
    expect(forgotten.statusCode).toBe(200);
    expect(forgotten.json()).toMatchObject({ fact: { id: next, content: null, trust: 'forgotten' } });
    const after = (await call('GET', `/api/agents/Scout/facts/${next}/history`, { as: owner })).json() as { versions: Array<{ fact: { content: string | null; trust: string } }> };
    expect(after.versions.every((version) => version.fact.content === null && version.fact.trust === 'forgotten')).toBe(true);
    expect(JSON.stringify(after)).not.toMatch(/Miso|Mochi|Tofu/);
    expectError(await call('POST', `/api/agents/Scout/facts/${next}/forget`, { as: member }), 409, 'fact_state');
  });

  it('reads another moment with validAt and recordedAt, and refuses a malformed one', async () => {
    const before = new Date(Date.now() - 60 * 60 * 1000).toISOString();
    const then = (await call('GET', `/api/agents/Scout/memory?validAt=${encodeURIComponent(before)}`, { as: owner })).json() as { groups: Array<{ facts: unknown[] }> };
    expect(then.groups.flatMap((group) => group.facts)).toEqual([]);
    const now = (await call('GET', '/api/agents/Scout/memory', { as: owner })).json() as { groups: Array<{ facts: unknown[] }> };
    expect(now.groups.flatMap((group) => group.facts).length).toBeGreaterThan(0);
    const bad = await call('GET', '/api/agents/Scout/memory?validAt=yesterday', { as: owner });
    expectError(bad, 400, 'invalid_request');
    expect((bad.json() as { error: { message: string } }).error.message).toMatch(/^query\.validAt: /);

    // Record time: a fact changes; asked as believed before the change, the old content; as believed now, the new one.
    const scout = await server.runtime.core.directory.agentByName('Scout');
    const stop = await server.runtime.memory.remember(
      { agentId: scout.id, personId: ada.id, audience: 'private' },
      { content: 'my bus stop is Elm Street', provenance: { actor: { kind: 'person', id: ada.id } } },
    );
    const firstBelieved = stop.fact.recordedAt.toISOString();
    const updated = await call('POST', `/api/agents/Scout/facts/${stop.fact.id}/update`, { as: owner, body: { content: 'my bus stop is Oak Street' } });
    expect(updated.statusCode, updated.body).toBe(200);
    const believed = async (query: Record<string, string>) => {
      const response = await call('GET', `/api/agents/Scout/memory?${new URLSearchParams({ person: 'Ada', ...query }).toString()}`, { as: owner });
      expect(response.statusCode, response.body).toBe(200);
      return (response.json() as { groups: Array<{ facts: Array<{ content: string }> }> }).groups.flatMap((group) => group.facts.map((fact) => fact.content)).filter((content) => content.startsWith('my bus stop'));
    };
    expect(await believed({ recordedAt: firstBelieved })).toEqual(['my bus stop is Elm Street']);
    expect(await believed({ recordedAt: new Date().toISOString() })).toEqual(['my bus stop is Oak Street']);
    // Asked now what it believed then about now: then it thought Elm Street would still hold; now it knows better.
    expect(await believed({ recordedAt: firstBelieved, validAt: new Date().toISOString() })).toEqual(['my bus stop is Elm Street']);
    expect(await believed({ validAt: new Date().toISOString() })).toEqual(['my bus stop is Oak Street']);
    // Before it was ever told: nothing.
    expect(await believed({ recordedAt: before })).toEqual([]);
    const badRecorded = await call('GET', '/api/agents/Scout/memory?recordedAt=last%20week', { as: owner });
    expectError(badRecorded, 400, 'invalid_request');
    expect((badRecorded.json() as { error: { message: string } }).error.message).toMatch(/^query\.recordedAt: /);
  });

  it('names the messages a fact came from: the door, the time, and the words of one’s own lines only; a forgotten one as forgotten', async () => {
    const scribe = await server.runtime.core.directory.addAgent({ name: 'Scribe', job: 'writes things down' });
    for (const [as, message] of [
      [owner, 'remember that my locker is number 12'],
      [member, 'remember that my bike is the red one'],
    ] as const) {
      const said = await call('POST', '/api/chat', { as, body: { agent: 'Scribe', message } });
      expect(said.statusCode, said.body).toBe(200);
      expect(said.body).toContain('event: done');
    }
    type Listed = { groups: Array<{ person: { name: string } | null; facts: Array<{ id: string; content: string; provenance: { actorKind: string; channel: string | null; tool: string | null; sourceMessageIds: string[]; sources: Array<Record<string, unknown>> } }> }> };
    const factOf = (listed: Listed, content: string) => listed.groups.flatMap((group) => group.facts).find((fact) => fact.content === content)!;

    const asOwner = await call('GET', '/api/agents/Scribe/memory', { as: owner });
    const ownerView = asOwner.json() as Listed;
    const locker = factOf(ownerView, 'my locker is number 12');
    expect(locker.provenance).toMatchObject({ actorKind: 'person', channel: 'web', sourceMessageIds: [expect.any(String)] });
    expect(locker.provenance.sources).toEqual([
      { id: locker.provenance.sourceMessageIds[0], channel: 'web', role: 'person', person: { id: ada.id, name: 'Ada' }, agent: null, at: expect.stringMatching(/Z$/), forgotten: false, own: true, text: 'remember that my locker is number 12' },
    ]);
    // Bob's fact, as the owner reads it: where and when he said it, not his words.
    const bike = factOf(ownerView, 'my bike is the red one');
    expect(bike.provenance.sources).toEqual([expect.objectContaining({ channel: 'web', role: 'person', person: { id: bob.id, name: 'Bob' }, own: false, forgotten: false, text: null })]);
    expect(asOwner.body).not.toContain('remember that my bike');

    // Bob reads his own: his words are there; Ada's fact and words are not, and her fact is not found.
    const asMember = await call('GET', '/api/agents/Scribe/memory', { as: member });
    expect(factOf(asMember.json() as Listed, 'my bike is the red one').provenance.sources).toEqual([
      expect.objectContaining({ person: { id: bob.id, name: 'Bob' }, own: true, forgotten: false, text: 'remember that my bike is the red one' }),
    ]);
    expect(asMember.body).not.toContain('locker');
    expectError(await call('GET', `/api/agents/Scribe/facts/${locker.id}/history`, { as: member }), 404, 'fact_not_found');

    // A second fact drawn from the same message; once the first is forgotten, its source shows as forgotten, without the words.
    const gym = await server.runtime.memory.remember(
      { agentId: scribe.id, personId: ada.id, audience: 'private' },
      { content: 'the gym opens at six', provenance: { actor: { kind: 'agent', id: 'Scribe' }, sourceMessageIds: locker.provenance.sourceMessageIds, tool: 'remember' } },
    );
    const beforeForget = factOf((await call('GET', '/api/agents/Scribe/memory', { as: owner })).json() as Listed, 'the gym opens at six');
    expect(beforeForget.provenance.sources).toEqual([expect.objectContaining({ forgotten: false, text: 'remember that my locker is number 12' })]);
    expect((await call('POST', `/api/agents/Scribe/facts/${locker.id}/forget`, { as: owner })).statusCode).toBe(200);
    const afterForget = await call('GET', '/api/agents/Scribe/memory', { as: owner });
    const gymAfter = factOf(afterForget.json() as Listed, 'the gym opens at six');
    expect(gymAfter.id).toBe(gym.fact.id);
    expect(gymAfter.provenance).toMatchObject({ actorKind: 'agent', tool: 'remember' });
    expect(gymAfter.provenance.sources).toEqual([expect.objectContaining({ id: locker.provenance.sourceMessageIds[0], person: { id: ada.id, name: 'Ada' }, own: true, forgotten: true, text: null })]);
    expect(afterForget.body).not.toContain('number 12');
  });
});

describe('agents, people, lessons and the audit', () => {
  it('validates input and answers each kind of refusal with its status', async () => {
    const missing = await call('POST', '/api/agents', { as: owner, body: { job: 'no name' } });
    expectError(missing, 400, 'invalid_request');
    expect((missing.json() as { error: { message: string } }).error.message).toMatch(/body\.name/);
    expectError(await call('POST', '/api/agents', { as: owner, body: { name: '1bad', job: 'finds' } }), 400, 'invalid_input');
    expectError(await call('POST', '/api/agents', { as: owner, body: { name: 'Scout', job: 'again' } }), 409, 'agent_exists');
    expectError(await call('POST', '/api/agents', { as: owner, body: { name: 'Remote', job: 'x', engine: 'openai:gpt-4o-mini' } }), 400, 'engine_key_missing');
    expectError(await call('PATCH', '/api/agents/Nobody', { as: owner, body: { job: 'x' } }), 404, 'agent_not_found');
    expectError(await call('PATCH', '/api/agents/Scout', { as: owner, body: {} }), 400, 'invalid_request');
    expectError(await call('GET', '/api/audit?limit=0', { as: owner }), 400, 'invalid_request');
    expectError(await call('POST', '/api/people', { as: owner, body: { name: 'Bob' } }), 409, 'person_exists');
    expectError(await call('POST', '/api/approvals/not-an-id/approve', { as: owner }), 400, 'invalid_request');
    expectError(await call('POST', `/api/approvals/${randomUUID()}/approve`, { as: owner }), 404, 'approval_not_found');
    const garbled = await server.app.inject({ method: 'POST', url: '/api/people', headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken, 'content-type': 'application/json' }, payload: '{"name":' });
    expectError(garbled, 400, 'invalid_json');
    const huge = await call('POST', '/api/people', { as: owner, body: { name: 'x'.repeat(100_000) } });
    expectError(huge, 413, 'too_long');
  });

  it('adds, changes, archives, restores and purges agents', async () => {
    const added = await call('POST', '/api/agents', { as: owner, body: { name: 'Zoë', job: 'keeps notes' } });
    expect(added.statusCode).toBe(201);
    expect(added.json()).toMatchObject({ name: 'Zoë', job: 'keeps notes', engine: 'offline', status: 'active' });
    expect((await call('PATCH', '/api/agents/zoë', { as: owner, body: { name: 'Zoe', job: 'keeps short notes' } })).json()).toMatchObject({ name: 'Zoe', job: 'keeps short notes' });
    expect((await call('POST', '/api/agents/Zoe/archive', { as: owner })).json()).toMatchObject({ status: 'archived' });
    const listed = (await call('GET', '/api/agents?all=true', { as: owner })).json() as { agents: Array<{ name: string; status: string }> };
    expect(listed.agents.find((agent) => agent.name === 'Zoe')?.status).toBe('archived');
    expect(((await call('GET', '/api/agents', { as: owner })).json() as { agents: Array<{ name: string }> }).agents.map((agent) => agent.name)).not.toContain('Zoe');
    expectError(await call('POST', '/api/agents/Zoe/purge', { as: owner, body: { confirm: 'zoe' } }), 400, 'purge_unconfirmed');
    expect((await call('POST', '/api/agents/Zoe/restore', { as: owner })).json()).toMatchObject({ status: 'active' });
    expectError(await call('POST', '/api/agents/Zoe/restore', { as: owner }), 409, 'agent_active');
    await call('POST', '/api/agents/Zoe/archive', { as: owner });
    expect((await call('POST', '/api/agents/Zoe/purge', { as: owner, body: { confirm: 'Zoe' } })).json()).toMatchObject({ facts: 0 });
    expectError(await call('POST', '/api/agents/Zoe/archive', { as: owner }), 404, 'agent_not_found');
  });

  it('lists people with their handles, makes link codes, and reports engines and channels', async () => {
    await server.runtime.core.directory.linkIdentity(bob.id, 'telegram', '4242', 'bob_t');
    const people = (await call('GET', '/api/people', { as: owner })).json() as { people: Array<{ name: string; identities: unknown[] }> };
    expect(people.people.find((person) => person.name === 'Bob')?.identities).toEqual([{ channel: 'telegram', externalId: '4242', displayName: 'bob_t' }]);
    const code = await call('POST', '/api/people/Bob/link-code', { as: owner });
    expect(code.statusCode).toBe(201);
    expect(code.json()).toMatchObject({ code: expect.stringMatching(/^[A-Z2-9]{8}$/) });
    expectError(await call('POST', '/api/people/Nobody/link-code', { as: owner }), 404, 'person_not_found');
    const engines = (await call('GET', '/api/engines', { as: owner })).json() as { engines: Array<{ reference: string; configured: boolean }> };
    expect(engines.engines.find((engine) => engine.reference === 'offline')).toMatchObject({ configured: true });
    expect((await call('POST', '/api/engines/test', { as: owner, body: { engine: 'offline' } })).json()).toMatchObject({ ok: true, detail: expect.stringMatching(/^answered: “I'm Roster\. I run without a language model/) });
    expect((await call('POST', '/api/engines/test', { as: owner, body: { engine: 'anthropic:claude-x' } })).json()).toEqual({ ok: false, detail: 'anthropic:claude-x needs ANTHROPIC_API_KEY' });
    const channels = (await call('GET', '/api/channels', { as: owner })).json() as { channels: Array<{ channel: string; configured: boolean }> };
    expect(channels.channels.map((channel) => channel.channel)).toContain('telegram');
    expect(channels.channels.every((channel) => channel.configured === false)).toBe(true);
  });

  it('stores a channel token write-only: checked first, sealed, never answered back; members may not', async () => {
    const token = '9090:AAE-api-stored-telegram-token';
    const telegramOf = (body: string) => (JSON.parse(body) as { channels: Array<{ channel: string; configured: boolean; credentials: Array<{ name: string; source: string }> }> }).channels.find((entry) => entry.channel === 'telegram')!;
    // Refused, and nothing stored: a member; an unknown channel; a name the channel does not take; a value that is not a token.
    expectError(await call('POST', '/api/channels/telegram/credentials', { as: member, body: { values: { bot_token: token } } }), 403, 'owner_required');
    expectError(await call('POST', '/api/channels/fax/credentials', { as: owner, body: { values: { bot_token: token } } }), 400, 'invalid_request');
    expectError(await call('POST', '/api/channels/whatsapp/credentials', { as: owner, body: { values: { bot_token: token } } }), 400, 'invalid_request');
    expectError(await call('POST', '/api/channels/telegram/credentials', { as: owner, body: { values: { password: token } } }), 400, 'invalid_input');
    expectError(await call('POST', '/api/channels/telegram/credentials', { as: owner, body: { values: { bot_token: 'two words' } } }), 400, 'invalid_input');
    const bad = await call('POST', '/api/channels/slack/credentials', { as: owner, body: { values: { bot_token: 'xoxp-user-token', signing_secret: 'abc' } } });
    expectError(bad, 400, 'invalid_input');
    expect(bad.body).not.toContain('xoxp-user-token');
    const before = (await call('GET', '/api/channels', { as: owner })).body;
    expect(telegramOf(before)).toMatchObject({ configured: false, credentials: [{ name: 'bot_token', source: 'unset' }] });
    expect(before).not.toContain('"source":"stored"');

    // Stored: the answer says so, and holds no token; nor does any later answer.
    const stored = await call('POST', '/api/channels/telegram/credentials', { as: owner, body: { values: { bot_token: token } } });
    expect(stored.statusCode, stored.body).toBe(200);
    expect(stored.body).not.toContain(token);
    expect(telegramOf((await call('GET', '/api/channels', { as: owner })).body)).toMatchObject({ configured: true, credentials: [{ name: 'bot_token', source: 'stored' }] });
    const rows = await server.test.database.adminScope('test: read the stored credential', async (tx) => (await tx.query<{ sealed: string }>('select sealed from channel_credentials')).rows);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.sealed).not.toContain(token);
    expect(rows[0]!.sealed).not.toContain('9090');

    const removed = await call('DELETE', '/api/channels/telegram/credentials', { as: owner });
    expect(removed.json()).toMatchObject({ removed: 1, channel: { configured: false } });
    expect(answers.map((answer) => answer.body).join('\n')).not.toContain(token);
  });

  it('binds a channel to an agent under a policy, refusing an unknown agent and handles without the allowlist policy', async () => {
    expectError(await call('POST', '/api/channels/telegram/binding', { as: owner, body: { agent: 'Nobody' } }), 404, 'agent_not_found');
    expectError(await call('POST', '/api/channels/telegram/binding', { as: owner, body: { policy: 'open', allowlist: ['1'] } }), 400, 'invalid_request');
    const bound = await call('POST', '/api/channels/telegram/binding', { as: owner, body: { agent: 'Scout', policy: 'allowlist', allowlist: ['5001'] } });
    expect(bound.json()).toEqual({ account: 'default', agent: 'Scout', policy: 'allowlist', allowlist: ['5001'] });
    const listed = (await call('GET', '/api/channels', { as: owner })).json() as { channels: Array<{ channel: string; bindings: unknown[] }> };
    expect(listed.channels.find((entry) => entry.channel === 'telegram')!.bindings).toEqual([{ account: 'default', agent: 'Scout', policy: 'allowlist', allowlist: ['5001'] }]);
    expect((await call('DELETE', '/api/channels/telegram/binding', { as: owner })).json()).toEqual({ removed: true });
    expect((await call('DELETE', '/api/channels/telegram/binding', { as: owner })).json()).toEqual({ removed: false });
  });

  it('lets only an owner decide on a lesson, once', async () => {
    const scout = await server.runtime.core.directory.agentByName('Scout');
    const approvalId = await server.test.database.adminScope('test: an agent proposes a lesson', async (tx) => {
      const { rows } = await tx.query<{ id: string }>(
        `insert into approvals (agent_id, person_id, text, evidence, proposed_by_kind, proposed_by) values ($1, $2, $3, $4, 'agent', 'Scout') returning id`,
        [scout.id, ada.id, 'Always cite the source of a claim in the answer.', JSON.stringify([{ note: 'Ada asked for sources', messageId: randomUUID() }])],
      );
      return rows[0]!.id;
    });
    const pending = (await call('GET', '/api/approvals?agent=Scout', { as: owner })).json() as { approvals: Array<Record<string, unknown>> };
    expect(pending.approvals).toEqual([
      expect.objectContaining({ id: approvalId, agent: 'Scout', status: 'pending', proposedByKind: 'agent', evidence: [expect.objectContaining({ kind: 'note', text: 'Ada asked for sources' })] }),
    ]);
    expectError(await call('POST', `/api/approvals/${approvalId}/approve`, { as: member }), 403, 'owner_required');
    const approved = await call('POST', `/api/approvals/${approvalId}/approve`, { as: owner });
    expect(approved.statusCode).toBe(200);
    const lessonId = (approved.json() as { lesson: { id: string } }).lesson.id;
    expectError(await call('POST', `/api/approvals/${approvalId}/approve`, { as: owner }), 409, 'approval_decided');
    expect(((await call('GET', '/api/agents/Scout/lessons', { as: owner })).json() as { lessons: Array<{ id: string; status: string }> }).lessons).toEqual([
      expect.objectContaining({ id: lessonId, status: 'active' }),
    ]);
    expectError(await call('POST', `/api/lessons/${lessonId}/retire`, { as: owner, body: { reason: ' ' } }), 400, 'invalid_request');
    expect((await call('POST', `/api/lessons/${lessonId}/retire`, { as: owner, body: { reason: 'too strict' } })).statusCode).toBe(200);
    expectError(await call('POST', `/api/lessons/${lessonId}/retire`, { as: owner, body: { reason: 'again' } }), 404, 'lesson_not_found');
    const mirror = (await call('GET', '/api/agents/Scout/mirror', { as: owner })).json() as Record<string, unknown>;
    expect(mirror).toMatchObject({ agent: 'Scout', total: 0, learned: 0, passRate: [] });
  });

  it('shows a lesson’s evidence with the messages it came from, and an approved lesson’s version and approver', async () => {
    const { directory } = server.runtime.core;
    const herald = await directory.addAgent({ name: 'Herald', job: 'brings news' });
    for (const message of ['from now on, keep the news to three lines', 'next time keep the news to three lines']) {
      const said = await call('POST', '/api/chat', { as: owner, body: { agent: 'Herald', message } });
      expect(said.body).toContain('event: done');
    }
    const { runtime } = server;
    const deps = { database: server.test.database, memory: runtime.memory, directory, engineFor: runtime.engineFor, judgeFor: runtime.judgeFor };
    expect(await runAsJob('review', () => handlers.review(deps, { agentId: herald.id }, { progress: async () => undefined }))).toMatchObject({ proposed: 1 });

    type Evidence = { kind: string; person: string | null; personId: string | null; message: { channel: string | null; at: string; text: string | null; forgotten: boolean } | null };
    const listed = (await call('GET', '/api/approvals?agent=Herald', { as: owner })).json() as { approvals: Array<{ id: string; text: string; evidence: Evidence[] }> };
    expect(listed.approvals).toHaveLength(1);
    const [approval] = listed.approvals;
    expect(approval!.text).toBe('Keep the news to three lines.');
    expect(approval!.evidence.map((entry) => [entry.kind, entry.person, entry.personId, entry.message?.channel, entry.message?.text, entry.message?.forgotten])).toEqual([
      ['preference', 'Ada', ada.id, 'web', 'from now on, keep the news to three lines', false],
      ['preference', 'Ada', ada.id, 'web', 'next time keep the news to three lines', false],
    ]);
    expect(approval!.evidence.every((entry) => !Number.isNaN(Date.parse(entry.message!.at)))).toBe(true);
    // A member does not see them.
    expectError(await call('GET', '/api/approvals?agent=Herald', { as: member }), 403, 'owner_required');

    const approved = await call('POST', `/api/approvals/${approval!.id}/approve`, { as: owner });
    expect(approved.json()).toMatchObject({ lesson: { version: 1, approvedBy: ada.id, approver: { id: ada.id, name: 'Ada' }, status: 'active', retiredAt: null } });
    const lessons = (await call('GET', '/api/agents/Herald/lessons', { as: owner })).json() as { lessons: Array<Record<string, unknown> & { evidence: Evidence[] }> };
    expect(lessons.lessons).toEqual([
      expect.objectContaining({ text: 'Keep the news to three lines.', version: 1, approver: { id: ada.id, name: 'Ada' }, approvedAt: expect.stringMatching(/Z$/), retiredAt: null, retiredReason: null }),
    ]);
    expect(lessons.lessons[0]!.evidence.map((entry) => entry.message?.text)).toEqual(['from now on, keep the news to three lines', 'next time keep the news to three lines']);
    // Retired with a reason: it says when and why.
    await call('POST', `/api/lessons/${String(lessons.lessons[0]!.id)}/retire`, { as: owner, body: { reason: 'longer news now' } });
    const retired = (await call('GET', '/api/agents/Herald/lessons', { as: owner })).json() as { lessons: Array<Record<string, unknown>> };
    expect(retired.lessons).toEqual([expect.objectContaining({ status: 'retired', version: 1, approver: { id: ada.id, name: 'Ada' }, retiredAt: expect.stringMatching(/Z$/), retiredReason: 'longer news now' })]);
  });

  it('lists audit events without content and verifies the chains', async () => {
    const events = (await call('GET', '/api/audit?agent=Scout&limit=5', { as: owner })).json() as { events: Array<{ agent: string; action: string }> };
    expect(events.events.length).toBe(5);
    expect(events.events.every((event) => event.agent === 'Scout')).toBe(true);
    const forgets = (await call('GET', '/api/audit?action=forget', { as: owner })).json() as { events: Array<{ action: string }> };
    expect(forgets.events.length).toBeGreaterThan(0);
    expect(forgets.events.every((event) => event.action === 'forget')).toBe(true);
    expect(JSON.stringify(events)).not.toMatch(/Lia|Miso/);
    const verified = await call('POST', '/api/audit/verify', { as: owner, body: { agent: 'Scout' } });
    expect(verified.json()).toMatchObject({ ok: true, chains: [{ agent: 'Scout', ok: true, broken: null }] });
    expectError(await call('POST', '/api/audit/verify', { as: owner, body: { agent: 'Nobody' } }), 404, 'agent_not_found');
  });
});


answeredNoStack(80);
