import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, Transaction } from './database.js';
import type { Scope } from './scope.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

let test: TestDatabase;
let db: Database;
const ids = { scout: '', coder: '', ada: '', bob: '' };

async function insertFact(tx: Transaction, agentId: string, personId: string | null, audience: 'private' | 'agent', content: string) {
  await tx.query(
    `insert into facts (agent_id, person_id, audience, content, content_hash) values ($1, $2, $3, $4, md5($4))`,
    [agentId, personId, audience, content],
  );
}

async function visible(scope: Scope): Promise<string[]> {
  return db.withScope(scope, async (tx) => {
    const { rows } = await tx.query<{ content: string }>('select content from facts order by content');
    return rows.map((row) => row.content);
  });
}

beforeAll(async () => {
  test = await openTestDatabase();
  db = test.database;
  await db.adminScope('test: seed agents, people and facts', async (tx) => {
    const agents = await tx.query<{ id: string; name: string }>(
      `insert into agents (name, job) values ('Scout', 'finds things'), ('Coder', 'writes code') returning id, name`,
    );
    const people = await tx.query<{ id: string; name: string }>(
      `insert into people (name, role) values ('Ada', 'owner'), ('Bob', 'member') returning id, name`,
    );
    ids.scout = agents.rows.find((row) => row.name === 'Scout')!.id;
    ids.coder = agents.rows.find((row) => row.name === 'Coder')!.id;
    ids.ada = people.rows.find((row) => row.name === 'Ada')!.id;
    ids.bob = people.rows.find((row) => row.name === 'Bob')!.id;
    await insertFact(tx, ids.scout, ids.ada, 'private', 'scout-ada-private');
    await insertFact(tx, ids.scout, ids.bob, 'private', 'scout-bob-private');
    await insertFact(tx, ids.scout, null, 'agent', 'scout-agent-wide');
    await insertFact(tx, ids.coder, ids.ada, 'private', 'coder-ada-private');
  });
});

afterAll(async () => {
  await test?.cleanup();
});

describe('adminScope handed to a scope', () => {
  it('reads as the scope from the moment it enters one, with nothing of an earlier scope left, and its earlier handles send nothing more', async () => {
    const ada: Scope = { agentId: ids.scout, personId: ids.ada, audience: 'private' };
    const bob: Scope = { agentId: ids.scout, personId: ids.bob, audience: 'private' };
    const facts = async (tx: Transaction) => (await tx.query<{ content: string }>('select content from facts order by content')).rows.map((row) => row.content);
    const seen = await db.adminScope('test: enter scopes', async (tx, enter) => {
      // Positive control: as roster_ops the transaction reads every scope.
      const asOps = await facts(tx);
      const inAda = await enter(ada, { settings: { enable_sort: 'off' } });
      const asAda = await facts(inAda);
      const adaSettings = (await inAda.query<{ sort: string; role: string }>(`select current_setting('enable_sort') as sort, current_user as role`)).rows[0];
      const adminAfter = await tx.query('select 1').then(
        () => 'sent',
        (error: { code?: string }) => error.code,
      );
      const inBob = await enter(bob);
      const asBob = await facts(inBob);
      const bobSort = (await inBob.query<{ sort: string }>(`select current_setting('enable_sort') as sort`)).rows[0]?.sort;
      const adaAfter = await inAda.query('select 1').then(
        () => 'sent',
        (error: { code?: string }) => error.code,
      );
      return { asOps, asAda, adaSettings, adminAfter, asBob, bobSort, adaAfter };
    });
    expect(seen.asOps).toEqual(['coder-ada-private', 'scout-ada-private', 'scout-agent-wide', 'scout-bob-private']);
    expect(seen.asAda).toEqual(['scout-ada-private', 'scout-agent-wide']);
    expect(seen.adaSettings).toEqual({ sort: 'off', role: 'roster_app' });
    expect(seen.adminAfter).toBe('scope_switched');
    expect(seen.asBob).toEqual(['scout-agent-wide', 'scout-bob-private']);
    expect(seen.bobSort).toBe('on');
    expect(seen.adaAfter).toBe('scope_switched');
  });
});

describe('withScope', () => {
  it('opens with settings for its transaction only, and refuses one that names the scope or the role', async () => {
    const scope: Scope = { agentId: ids.scout, personId: ids.ada, audience: 'private' };
    const read = (tx: Transaction) => tx.query<{ sort: string; agent: string }>(`select current_setting('enable_sort') as sort, current_setting('roster.agent_id') as agent`);
    const inside = await db.withScope(scope, async (tx) => (await read(tx)).rows[0], { settings: { enable_sort: 'off' } });
    expect(inside).toEqual({ sort: 'off', agent: ids.scout });
    // Positive control: without settings the planner's default holds, and the scope reads as before.
    expect((await db.withScope(scope, async (tx) => (await read(tx)).rows[0]))?.sort).toBe('on');
    for (const name of ['roster.agent_id', 'role', 'enable_sort; drop table facts']) {
      await expect(db.withScope(scope, async () => 'ran', { settings: { [name]: 'x' } })).rejects.toMatchObject({ code: 'scope_setting_invalid' });
    }
    expect(await visible(scope)).toEqual(['scout-ada-private', 'scout-agent-wide']);
  });

  it("opens with its agent's audit chain locked and where it ends, when asked, directly or entered from an admin transaction", async () => {
    const scope: Scope = { agentId: ids.scout, personId: ids.ada, audience: 'private' };
    const locks = async (tx: Transaction) => Number((await tx.query<{ n: string }>(`select count(*) as n from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()`)).rows[0]!.n);
    const head = [{ agent_id: ids.scout, seq: 0, hash: null, at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/) }];
    expect(await db.withScope(scope, async (tx) => ({ heads: tx.chainHeads, locks: await locks(tx) }), { chainHeads: true })).toEqual({ heads: head, locks: 1 });
    const entered = await db.adminScope('test: enter a scope with its chain', async (_tx, enter) => {
      const tx = await enter(scope, { chainHeads: true });
      return { heads: tx.chainHeads, locks: await locks(tx) };
    });
    expect(entered).toEqual({ heads: head, locks: 1 });
    // The control: not asked, nothing is read and nothing locked.
    expect(await db.withScope(scope, async (tx) => ({ heads: tx.chainHeads, locks: await locks(tx) }))).toEqual({ heads: undefined, locks: 0 });
  });

  it("reads agent A's fact inside A's scope and not inside B's", async () => {
    const scoutForAda = await visible({ agentId: ids.scout, personId: ids.ada, audience: 'private' });
    const coderForAda = await visible({ agentId: ids.coder, personId: ids.ada, audience: 'private' });

    expect(scoutForAda).toEqual(['scout-ada-private', 'scout-agent-wide']);
    expect(coderForAda).toEqual(['coder-ada-private']);
  });

  it("keeps one person's private facts from another person talking to the same agent", async () => {
    const scoutForBob = await visible({ agentId: ids.scout, personId: ids.bob, audience: 'private' });
    expect(scoutForBob).toEqual(['scout-agent-wide', 'scout-bob-private']);
    expect(scoutForBob).not.toContain('scout-ada-private');
  });

  it('withholds private facts in a group conversation and still reads agent-wide ones', async () => {
    const group = await visible({ agentId: ids.scout, personId: ids.ada, audience: 'group' });
    expect(group).toEqual(['scout-agent-wide']);
  });

  it('reads no memory row without a scope, while the rows exist', async () => {
    const unscoped = await db.query<{ content: string }>('select content from facts');
    const all = await db.adminScope('test: count every fact', async (tx) => (await tx.query('select content from facts')).rows);

    expect(unscoped.rows).toEqual([]);
    expect(all).toHaveLength(4);
  });

  it("rejects, in the database, an insert into another agent's scope; its own insert succeeds", async () => {
    const scope: Scope = { agentId: ids.scout, personId: ids.ada, audience: 'private' };

    await db.withScope(scope, (tx) => insertFact(tx, ids.scout, ids.ada, 'private', 'scout-ada-second'));
    await expect(db.withScope(scope, (tx) => insertFact(tx, ids.coder, ids.ada, 'private', 'smuggled'))).rejects.toMatchObject({
      code: '42501',
    });
    await expect(db.withScope(scope, (tx) => insertFact(tx, ids.scout, ids.bob, 'private', 'about-bob'))).rejects.toMatchObject({
      code: '42501',
    });

    const contents = await db.adminScope('test: list every fact', async (tx) =>
      (await tx.query<{ content: string }>('select content from facts')).rows.map((row) => row.content),
    );
    expect(contents).toContain('scout-ada-second');
    expect(contents).not.toContain('smuggled');
    expect(contents).not.toContain('about-bob');
  });

  it("cannot change or delete another scope's facts", async () => {
    const scope: Scope = { agentId: ids.coder, personId: ids.bob, audience: 'private' };
    const updated = await db.withScope(scope, async (tx) => (await tx.query(`update facts set content = 'changed'`)).rowCount);
    expect(updated).toBe(0);
    await expect(db.withScope(scope, (tx) => tx.query('delete from facts'))).rejects.toMatchObject({ code: '42501' });

    const own = await db.withScope({ agentId: ids.coder, personId: ids.ada, audience: 'private' }, async (tx) =>
      (await tx.query(`update facts set category = 'work' where content = 'coder-ada-private'`)).rowCount,
    );
    expect(own).toBe(1);
  });

  it('runs concurrent scopes without mixing them', async () => {
    const scopes: Scope[] = [
      { agentId: ids.scout, personId: ids.ada, audience: 'private' },
      { agentId: ids.coder, personId: ids.ada, audience: 'private' },
      { agentId: ids.scout, personId: ids.bob, audience: 'private' },
    ];
    const results = await Promise.all(
      [...scopes, ...scopes].map((scope) =>
        db.withScope(scope, async (tx) => {
          const setting = await tx.query<{ agent: string }>(`select current_setting('roster.agent_id') as agent`);
          return { agent: setting.rows[0]?.agent, context: tx.scope.agentId, rows: (await tx.query('select 1 from facts')).rowCount };
        }),
      ),
    );
    results.forEach((result, index) => {
      const scope = scopes[index % scopes.length]!;
      expect(result.agent).toBe(scope.agentId);
      expect(result.context).toBe(scope.agentId);
      expect(result.rows).toBeGreaterThan(0);
    });
  });

  it('hands the checked scope to the transaction it runs', async () => {
    const scope: Scope = { agentId: ids.scout, personId: ids.ada, audience: 'private' };
    const inside = await db.withScope(scope, async (tx) => tx.scope);
    expect(inside).toEqual({ ...scope, conversationId: null });
  });

  it('refuses a malformed scope and a nested transaction with clear errors', async () => {
    await expect(db.withScope({ agentId: 'scout', personId: ids.ada, audience: 'private' }, async () => 1)).rejects.toMatchObject({
      code: 'scope_invalid',
    });
    await expect(db.withScope({ agentId: ids.scout, personId: null, audience: 'private' }, async () => 1)).rejects.toMatchObject({
      code: 'scope_invalid',
    });
    const scope: Scope = { agentId: ids.scout, personId: ids.ada, audience: 'private' };
    await expect(db.withScope(scope, () => db.withScope(scope, async () => 1))).rejects.toMatchObject({ code: 'scope_nested' });
    // The database is still usable after the refused nesting.
    expect(await visible(scope)).toContain('scout-ada-private');
  });
});
