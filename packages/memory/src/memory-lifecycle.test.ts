import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fade } from './fade.js';
import type { Memory } from './memory.js';
import { memoryFixture, saidBy, type MemoryFixture } from './testing/fixture.js';
import type { Scope } from '@roster/db';

let f: MemoryFixture;
let memory: Memory;
beforeEach(async () => {
  f = await memoryFixture();
  memory = f.memory;
});
afterEach(async () => {
  await f?.cleanup();
});

async function eventCount(): Promise<number> {
  return f.database.adminScope('test: count events', async (tx) => Number((await tx.query<{ n: string }>('select count(*) as n from memory_events')).rows[0]!.n));
}

async function factCount(): Promise<number> {
  return f.database.adminScope('test: count facts', async (tx) => Number((await tx.query<{ n: string }>('select count(*) as n from facts')).rows[0]!.n));
}

describe('trust', () => {
  it('starts what jobs and untrusted turns write as candidate, and what people say as active', async () => {
    const scope = f.dm('scout', 'ada');
    const person = await memory.remember(scope, { content: 'Ada is vegetarian', provenance: saidBy(f.people.ada) });
    const model = await memory.remember(scope, { content: 'Ada works at the port', provenance: { actor: { kind: 'agent', id: 'Scout' } } });
    const tainted = await memory.remember(scope, { content: 'Ada owns a boat', provenance: { actor: { kind: 'agent', id: 'Scout' }, untrusted: true } });
    const job = await memory.remember(scope, { content: 'Ada visits Genoa', provenance: { actor: { kind: 'job', id: 'extract' } } });
    expect([person, model, tainted, job].map((r) => r.fact.trust)).toEqual(['active', 'active', 'candidate', 'candidate']);

    const duplicate = await memory.remember(scope, { content: 'ada is VEGETARIAN.', provenance: saidBy(f.people.ada) });
    expect(duplicate).toMatchObject({ created: false, fact: { id: person.fact.id } });

    expect((await memory.confirm(scope, job.fact.id, saidBy(f.people.ada))).trust).toBe('verified');
    await memory.dispute(scope, model.fact.id, saidBy(f.people.ada));
    expect((await memory.list(scope)).map((fact) => fact.content)).not.toContain('Ada works at the port');
    await expect(memory.restore(scope, person.fact.id, saidBy(f.people.ada))).rejects.toMatchObject({ code: 'fact_state' });
  });

  it('never admits a rejected statement again from the same sources', async () => {
    const scope = f.dm('scout', 'ada');
    const conversation = await f.conversation('ada-web');
    const source = await f.message(conversation, 'person', 'I might move to Oslo', { person: f.people.ada });
    const extracted = { actor: { kind: 'job' as const, id: 'extract' }, sourceMessageIds: [source] };
    const { fact } = await memory.remember(scope, { content: 'Ada lives in Oslo', provenance: extracted });
    await memory.reject(scope, fact.id, saidBy(f.people.ada));

    await expect(memory.remember(scope, { content: 'Ada lives in Oslo', provenance: extracted })).rejects.toMatchObject({ code: 'rejected_statement' });
    // Positive control: the person stating it, explicitly, is admitted.
    const said = await f.message(conversation, 'person', 'remember I live in Oslo now', { person: f.people.ada });
    await expect(memory.remember(scope, { content: 'Ada lives in Oslo', provenance: saidBy(f.people.ada, [said], true) })).resolves.toMatchObject({
      created: true,
    });
  });
});

describe('audit', () => {
  it('leaves exactly one event per operation, verifies, and names the row a superuser tampered with', async () => {
    const scope = f.dm('scout', 'ada');
    const ada = saidBy(f.people.ada);
    const operations: Array<[string, () => Promise<unknown>]> = [];
    let id = '';
    let second = '';
    operations.push(['remember', async () => (id = (await memory.remember(scope, { content: 'Ada plays chess', provenance: ada })).fact.id)]);
    operations.push(['confirm', () => memory.confirm(scope, id, ada)]);
    operations.push(['update', async () => (id = (await memory.update(scope, id, 'Ada plays go', ada)).fact.id)]);
    operations.push(['correct', async () => (id = (await memory.correct(scope, id, 'Ada plays shogi', ada)).fact.id)]);
    operations.push(['dispute', () => memory.dispute(scope, id, ada)]);
    operations.push(['reject', () => memory.reject(scope, id, ada)]);
    operations.push(['remember', async () => (second = (await memory.remember(scope, { content: 'Ada reads maps', provenance: ada })).fact.id)]);
    operations.push(['use', () => memory.recordUse(scope, [second], 'recall', ada.actor)]);
    operations.push(['forget', () => memory.forget(scope, second, ada)]);
    for (const [action, run] of operations) {
      const before = await eventCount();
      await run();
      expect(await eventCount(), action).toBe(before + 1);
    }
    const actions = await f.database.adminScope('test: list actions', async (tx) =>
      (await tx.query<{ action: string }>('select action from memory_events order by seq')).rows.map((row) => row.action),
    );
    expect(actions).toEqual(operations.map(([action]) => action));

    const report = await memory.audit.verify({ agentId: f.agents.scout });
    expect(report).toEqual([
      { agentId: f.agents.scout, events: operations.length, unkeyed: 0, ok: true, broken: null, head: { seq: operations.length, hash: expect.stringMatching(/^[0-9a-f]{64}$/) } },
    ]);

    // The table refuses changes: roster_ops has no right to, and the owner's role meets the trigger.
    await expect(f.database.adminScope('test: try to edit history', (tx) => tx.query(`update memory_events set action = 'x'`))).rejects.toThrow(
      /permission denied/,
    );
    await expect(f.database.ownerScope('test: try to edit history', (tx) => tx.query(`update memory_events set action = 'x'`))).rejects.toThrow(
      /append-only/,
    );
    await expect(f.database.ownerScope('test: try to delete history', (tx) => tx.query('delete from memory_events'))).rejects.toThrow(/append-only/);

    // The owner can switch its trigger off; the chain still shows where.
    await f.database.ownerScope('test: tamper as the owner', async (tx) => {
      await tx.query('alter table memory_events disable trigger memory_events_append_only');
      await tx.query(`update memory_events set detail = '{"from":"active","to":"rejected"}' where agent_id = $1 and seq = 4`, [f.agents.scout]);
      await tx.query('alter table memory_events enable trigger memory_events_append_only');
    });
    const tampered = await memory.audit.verify({ agentId: f.agents.scout });
    expect(tampered[0]).toMatchObject({ ok: false, broken: { seq: 4, problem: 'its content does not match its hash' } });
  });

  it('keeps secrets and forgotten words out of events', async () => {
    const scope = f.dm('scout', 'ada');
    const { fact } = await memory.remember(scope, { content: 'The staging password=hunter2-horse', provenance: saidBy(f.people.ada) });
    expect(fact.content).toBe('The staging password=[redacted:password]');
    const details = await f.database.adminScope('test: read event details', async (tx) =>
      JSON.stringify((await tx.query('select * from memory_events')).rows),
    );
    expect(details).not.toContain('hunter2');
    expect(details).not.toContain('staging');
  });
});

describe('redaction and bad input', () => {
  it('stores each kind of secret redacted', async () => {
    const scope = f.dm('coder', 'bob');
    const secrets: Array<[string, string]> = [
      ['openai-key', `my key is sk-proj-${'a1B2'.repeat(10)}`],
      ['anthropic-key', `use sk-ant-api03-${'Zx9_'.repeat(10)}`],
      ['aws-access-key', `aws id AKIA${'ABCDEFGHIJKLMNOP'}`],
      ['github-token', `token ghp_${'a'.repeat(36)}`],
      ['slack-token', `bot xoxb-${'1234567890'}-${'abcdefghij'}`],
      ['telegram-bot-token', `bot 123456789:${'A'.repeat(35)}`],
      ['jwt', `jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.${'s'.repeat(20)}`],
      ['bearer', 'header Authorization: Bearer abcdef123456'],
      ['password', 'db password=correct-horse'],
      ['private-key', `-----BEGIN RSA PRIVATE KEY-----\n${'M'.repeat(64)}\n-----END RSA PRIVATE KEY-----`],
      ['card-number', 'card 4111 1111 1111 1111'],
    ];
    for (const [kind, text] of secrets) {
      const { fact } = await memory.remember(scope, { content: text, provenance: saidBy(f.people.bob) });
      expect(fact.content, kind).toContain(`[redacted:${kind}]`);
    }
    const stored = await f.database.adminScope('test: read facts', async (tx) => JSON.stringify((await tx.query('select content from facts')).rows));
    expect(stored).not.toContain('correct-horse');
    expect(stored).not.toContain('4111 1111');
  });

  it('refuses each bad input with a typed error and writes nothing', async () => {
    const scope = f.dm('scout', 'ada');
    const before = [await factCount(), await eventCount()];
    const bad: Array<[unknown, string]> = [
      ['', 'empty'],
      ['   ', 'empty'],
      ['x'.repeat(4001), 'too-long'],
      ['null\u0000byte', 'nul'],
      ['broken \uD800 surrogate', 'lone-surrogate'],
      [42, 'not-text'],
    ];
    for (const [content, reason] of bad) {
      await expect(memory.remember(scope, { content: content as string, provenance: saidBy(f.people.ada) })).rejects.toMatchObject({
        code: 'memory_input_invalid',
        reason,
      });
    }
    await expect(memory.remember(scope, { content: 'ok', category: 'Bad Category!', provenance: saidBy(f.people.ada) })).rejects.toMatchObject({
      code: 'memory_input_invalid',
    });
    expect([await factCount(), await eventCount()]).toEqual(before);
    // Positive control: 4,000 characters is allowed.
    await expect(memory.remember(scope, { content: 'y'.repeat(4000), provenance: saidBy(f.people.ada) })).resolves.toMatchObject({ created: true });
  });
});

describe('fade and uses', () => {
  it('fades old unused facts of every agent, keeps used and protected ones, and restores', async () => {
    const ada = saidBy(f.people.ada);
    const old = await memory.remember(f.dm('scout', 'ada'), { content: 'Ada once liked jazz', provenance: ada });
    const oldCoder = await memory.remember(f.dm('coder', 'bob'), { content: 'Bob once used vim', provenance: saidBy(f.people.bob) });
    const used = await memory.remember(f.dm('scout', 'ada'), { content: 'Ada once liked opera', provenance: ada });
    const protectedFact = await memory.remember(f.dm('scout', 'ada'), { content: 'Ada is allergic to nuts', category: 'safety', provenance: ada });
    const fresh = await memory.remember(f.dm('scout', 'ada'), { content: 'Ada now likes techno', provenance: ada });
    await memory.recordUse(f.dm('scout', 'ada'), [used.fact.id], 'recall', ada.actor);
    await memory.recordUse(f.dm('scout', 'ada'), [used.fact.id], 'citation', ada.actor);
    await f.database.adminScope('test: age four facts by 60 days', async (tx) => {
      await tx.query(`update facts set recorded_at = now() - interval '60 days', last_used_at = case when last_used_at is null then null else now() - interval '50 days' end where id = any($1)`, [
        [old.fact.id, oldCoder.fact.id, used.fact.id, protectedFact.fact.id],
      ]);
    });

    const report = await fade(f.database, memory.audit, { batchSize: 1 });
    expect(report).toMatchObject({ faded: 2, agents: 2 });
    // One event per faded fact, each in its agent's intact chain.
    const chains = await memory.audit.verify();
    expect(chains.every((chain) => chain.ok)).toBe(true);
    const fadeEvents = await f.database.adminScope('test: fade events', async (tx) =>
      (await tx.query<{ target_id: string }>(`select target_id from memory_events where action = 'fade' order by target_id`)).rows.map((row) => row.target_id),
    );
    expect(fadeEvents).toEqual([old.fact.id, oldCoder.fact.id].sort());
    const trust = async (scope: Scope, id: string) =>
      f.database.withScope(scope, async (tx) => (await tx.query<{ trust: string }>('select trust from facts where id = $1', [id])).rows[0]!.trust);
    expect(await trust(f.dm('scout', 'ada'), old.fact.id)).toBe('faded');
    expect(await trust(f.dm('coder', 'bob'), oldCoder.fact.id)).toBe('faded');
    expect(await trust(f.dm('scout', 'ada'), used.fact.id)).toBe('active');
    expect(await trust(f.dm('scout', 'ada'), protectedFact.fact.id)).toBe('active');
    expect(await trust(f.dm('scout', 'ada'), fresh.fact.id)).toBe('active');

    expect((await memory.search(f.dm('scout', 'ada'), 'jazz')).map((r) => r.fact.id)).not.toContain(old.fact.id);
    await memory.restore(f.dm('scout', 'ada'), old.fact.id, ada);
    expect((await memory.search(f.dm('scout', 'ada'), 'jazz')).map((r) => r.fact.id)).toContain(old.fact.id);
  });

  it('does not count being retrieved as a use; a recall hit does', async () => {
    const scope = f.dm('scout', 'ada');
    const { fact } = await memory.remember(scope, { content: 'Ada parks on level three', provenance: saidBy(f.people.ada) });
    const results = await memory.search(scope, 'where does Ada park');
    expect(results[0]?.fact.id).toBe(fact.id);
    expect(results[0]?.scores).toMatchObject({ fullText: expect.any(Object), vector: expect.any(Object) });
    expect((await memory.get(scope, fact.id)).uses).toBe(0);
    await memory.recordUse(scope, [fact.id], 'recall', { kind: 'agent', id: 'Scout' });
    expect((await memory.get(scope, fact.id)).uses).toBe(1);
  });
});
