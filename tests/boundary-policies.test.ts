import { createHash } from 'node:crypto';
import { testInstallationKey } from '@roster/config/testing';
import { tablesWithoutContent, type Database, type Scope, type Transaction } from '@roster/db';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createAuditLog } from '@roster/memory';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The boundary as Postgres enforces it, through the runtime's own roles (the
 * embedded database runs them as it would on a managed Postgres: no
 * superuser). Every table that holds people's words gets three rows — mine
 * (Scout with Ada), the same agent with another person (Scout with Bob), and
 * another agent with the same person (Coder with Ada) — and Scout's scope for
 * Ada must see exactly its own.
 */
let test: TestDatabase;
let db: Database;
const id = { scout: '', coder: '', ada: '', bob: '', dmAda: '', dmBob: '', group: '' };

type Row = 'mine' | 'other-person' | 'other-agent';
interface TableCase {
  table: string;
  /** Insert the row tagged `tag` for (agent, person); conversation is the person's direct one. */
  seed(tx: Transaction, row: { tag: string; agent: string; person: string; conversation: string }): Promise<void>;
  /** The tags a transaction can read. */
  read: string;
  /** What Scout's scope for Ada sees: its own row, or nothing for tables only roster_ops reads. */
  seen: Row[];
}

const cases: TableCase[] = [
  {
    table: 'facts',
    seed: (tx, r) => tx.query(`insert into facts (agent_id, person_id, content, content_hash) values ($1, $2, $3, $3)`, [r.agent, r.person, r.tag]).then(() => {}),
    read: 'select content as tag from facts',
    seen: ['mine'],
  },
  {
    table: 'fact_embeddings',
    seed: async (tx, r) => {
      const fact = await tx.query<{ id: string }>(`insert into facts (agent_id, person_id, content, content_hash) values ($1, $2, 'x', 'x') returning id`, [r.agent, r.person]);
      await tx.query(`insert into fact_embeddings (fact_id, model, agent_id, person_id, audience, embedding) values ($1, $2, $3, $4, 'private', '[1,0]')`, [fact.rows[0]!.id, r.tag, r.agent, r.person]);
    },
    read: 'select model as tag from fact_embeddings',
    seen: ['mine'],
  },
  {
    table: 'tombstones',
    seed: (tx, r) => tx.query(`insert into tombstones (agent_id, person_id, content_hash, minhash) values ($1, $2, $3, '{}')`, [r.agent, r.person, r.tag]).then(() => {}),
    read: 'select content_hash as tag from tombstones',
    seen: ['mine'],
  },
  {
    table: 'messages',
    seed: (tx, r) =>
      tx.query(`insert into messages (conversation_id, role, person_id, agent_id, content, visibility) values ($1, 'person', $2, $3, $4, 'pair')`, [r.conversation, r.person, r.agent, r.tag]).then(() => {}),
    read: 'select content as tag from messages',
    seen: ['mine'],
  },
  {
    table: 'memory_events',
    seed: (tx, r) =>
      createAuditLog({ database: db, key: testInstallationKey })
        .append(tx, { agentId: r.agent, personId: r.person, actor: { kind: 'person' }, action: r.tag, targetKind: 'fact', targetId: null })
        .then(() => {}),
    read: 'select action as tag from memory_events',
    seen: ['mine'],
  },
  {
    table: 'outbox',
    seed: (tx, r) => tx.query(`insert into outbox (queue, name, dedupe_key, agent_id, person_id) values ('embed', 'embed-fact', $1, $2, $3)`, [r.tag, r.agent, r.person]).then(() => {}),
    read: 'select dedupe_key as tag from outbox',
    seen: ['mine'],
  },
  {
    table: 'learning_events',
    seed: (tx, r) => tx.query(`insert into learning_events (agent_id, person_id, kind, text) values ($1, $2, 'correction', $3)`, [r.agent, r.person, r.tag]).then(() => {}),
    read: 'select text as tag from learning_events',
    seen: ['mine'],
  },
  {
    table: 'approvals',
    seed: (tx, r) =>
      tx.query(`insert into approvals (agent_id, person_id, text, proposed_by_kind) values ($1, $2, $3, 'job')`, [r.agent, r.person, r.tag]).then(() => {}),
    read: 'select text as tag from approvals',
    seen: ['mine'],
  },
  {
    table: 'lessons',
    seed: async (tx, r) => {
      const text = `${r.tag} — a lesson long enough`;
      const approval = await tx.query<{ id: string }>(
        `insert into approvals (agent_id, person_id, text, proposed_by_kind, status, decided_by, decided_at) values ($1, $2, $3, 'job', 'approved', $2, now()) returning id`,
        [r.agent, r.person, text],
      );
      await tx.query(`insert into lessons (agent_id, person_id, text, text_hash, approval_id, approved_by) values ($1, $2, $3, $3, $4, $2)`, [r.agent, r.person, text, approval.rows[0]!.id]);
    },
    read: `select split_part(text, ' ', 1) as tag from lessons`,
    seen: ['mine'],
  },
  {
    table: 'mirror_cases',
    seed: (tx, r) => tx.query(`insert into mirror_cases (agent_id, person_id, text, text_hash) values ($1, $2, $3, $3)`, [r.agent, r.person, r.tag]).then(() => {}),
    read: 'select text as tag from mirror_cases',
    seen: ['mine'],
  },
  {
    table: 'mirror_runs',
    seed: async (tx, r) => {
      const mirrorCase = await tx.query<{ id: string }>(`insert into mirror_cases (agent_id, person_id, text, text_hash) values ($1, $2, 'case', $3) returning id`, [r.agent, r.person, `case-${r.tag}`]);
      await tx.query(`insert into mirror_runs (case_id, agent_id, person_id, answer, verdict) values ($1, $2, $3, $4, 'pass')`, [mirrorCase.rows[0]!.id, r.agent, r.person, r.tag]);
    },
    read: 'select answer as tag from mirror_runs',
    seen: ['mine'],
  },
  {
    table: 'episodes',
    seed: async (tx, r) => {
      // One episode per (conversation, agent): each row gets a conversation of its own, the person's.
      const conversation = await tx.query<{ id: string }>(`insert into conversations (channel, external_id, person_id) values ('web', $1, $2) returning id`, [`episode-${r.tag}`, r.person]);
      await tx.query(`insert into episodes (conversation_id, agent_id, person_id, summary) values ($1, $2, $3, $4)`, [conversation.rows[0]!.id, r.agent, r.person, r.tag]);
    },
    read: 'select summary as tag from episodes',
    seen: ['mine'],
  },
  {
    table: 'identities',
    seed: (tx, r) => tx.query(`insert into identities (person_id, channel, external_id) values ($1, 'telegram', $2)`, [r.person, r.tag]).then(() => {}),
    read: 'select external_id as tag from identities',
    // Handles are the person's, whichever agent they talk to.
    seen: ['mine', 'other-agent'],
  },
  {
    table: 'link_codes',
    seed: (tx, r) => tx.query(`insert into link_codes (code, person_id, expires_at) values ($1, $2, now() + interval '1 hour')`, [codeOf(r.tag), r.person]).then(() => {}),
    read: 'select code as tag from link_codes',
    seen: [],
  },
  {
    table: 'channel_bindings',
    seed: (tx, r) => tx.query(`insert into channel_bindings (channel, account, agent_id, allowlist) values ('telegram', $1, $2, array[$3])`, [r.tag, r.agent, r.person]).then(() => {}),
    read: 'select account as tag from channel_bindings',
    seen: [],
  },
  {
    table: 'login_links',
    seed: (tx, r) => tx.query(`insert into login_links (token_hash, person_id, expires_at) values ($1, $2, now() + interval '15 minutes')`, [hashOf(r.tag), r.person]).then(() => {}),
    read: `select token_hash as tag from login_links`,
    seen: [],
  },
  {
    table: 'web_sessions',
    seed: (tx, r) => tx.query(`insert into web_sessions (token_hash, person_id, expires_at) values ($1, $2, now() + interval '1 day')`, [hashOf(r.tag), r.person]).then(() => {}),
    read: `select token_hash as tag from web_sessions`,
    seen: [],
  },
  {
    table: 'api_tokens',
    seed: (tx, r) => tx.query(`insert into api_tokens (token_hash, person_id, name) values ($1, $2, $3)`, [hashOf(r.tag), r.person, r.tag]).then(() => {}),
    read: `select name as tag from api_tokens`,
    seen: [],
  },
  {
    table: 'channel_inbox',
    seed: (tx, r) =>
      tx.query(`insert into channel_inbox (channel, account, delivery_id, sender, event) values ('telegram', 'default', $1, $2, jsonb_build_object('inbound', jsonb_build_object('text', $1::text)))`, [r.tag, r.person]).then(() => {}),
    read: `select delivery_id as tag from channel_inbox`,
    seen: [],
  },
  {
    table: 'channel_credentials',
    seed: (tx, r) => tx.query(`insert into channel_credentials (channel, account, name, sealed) values ('telegram', $1, 'bot_token', 'v1.sealed')`, [r.tag]).then(() => {}),
    read: `select account as tag from channel_credentials`,
    seen: [],
  },
  {
    table: 'approval_pushes',
    seed: (tx, r) =>
      tx
        .query(
          `with approval as (insert into approvals (agent_id, text, proposed_by_kind, proposed_by) values ($1, 'Cite two sources.', 'agent', 'Scout') returning id)
           insert into approval_pushes (approval_id, channel, external_id) select id, 'telegram', $2 from approval`,
          [r.agent, r.tag],
        )
        .then(() => {}),
    read: `select external_id as tag from approval_pushes`,
    seen: [],
  },
  {
    table: 'whatsapp_sessions',
    seed: (tx, r) => tx.query(`insert into whatsapp_sessions (account, status) values ($1, 'logged_out')`, [r.tag]).then(() => {}),
    read: `select account as tag from whatsapp_sessions`,
    seen: [],
  },
  {
    table: 'whatsapp_keys',
    seed: (tx, r) => tx.query(`insert into whatsapp_keys (account, kind, id, value_sealed) values ($1, 'pre-key', '1', 'sealed')`, [r.tag]).then(() => {}),
    read: `select account as tag from whatsapp_keys`,
    seen: [],
  },
];

const rows: Record<Row, { agent: () => string; person: () => string; conversation: () => string }> = {
  mine: { agent: () => id.scout, person: () => id.ada, conversation: () => id.dmAda },
  'other-person': { agent: () => id.scout, person: () => id.bob, conversation: () => id.dmBob },
  'other-agent': { agent: () => id.coder, person: () => id.ada, conversation: () => id.dmAda },
};
const tagOf = (table: string, row: Row) => `${table}:${row}`;
/** A credential's stored form: the SHA-256 of something, in hex. */
const hashOf = (tag: string) => createHash('sha256').update(tag).digest('hex');
/** A link code made of the allowed alphabet, distinct per row. */
const codeOf = (tag: string) => ({ mine: 'AAAAAAAA', 'other-person': 'BBBBBBBB', 'other-agent': 'CCCCCCCC' })[tag.split(':')[1] as Row];
/** Tables whose rows keep a hash where the others keep the tag. */
const hashedTables = new Set(['login_links', 'web_sessions']);
const tagsFor = (table: string, seen: readonly Row[]) =>
  seen.map((row) => (table === 'link_codes' ? codeOf(tagOf(table, row)) : hashedTables.has(table) ? hashOf(tagOf(table, row)) : tagOf(table, row))).sort();

beforeAll(async () => {
  test = await openTestDatabase();
  db = test.database;
  await db.adminScope('test: seed the directory and one row per scope in every table', async (tx) => {
    const agents = await tx.query<{ id: string; name: string }>(`insert into agents (name, job) values ('Scout', 'finds'), ('Coder', 'codes') returning id, name`);
    const people = await tx.query<{ id: string; name: string }>(`insert into people (name, role) values ('Ada', 'owner'), ('Bob', 'member') returning id, name`);
    id.scout = agents.rows.find((row) => row.name === 'Scout')!.id;
    id.coder = agents.rows.find((row) => row.name === 'Coder')!.id;
    id.ada = people.rows.find((row) => row.name === 'Ada')!.id;
    id.bob = people.rows.find((row) => row.name === 'Bob')!.id;
    const conversation = async (externalId: string, kind: 'dm' | 'group', person: string | null) =>
      (await tx.query<{ id: string }>(`insert into conversations (channel, external_id, kind, person_id) values ('web', $1, $2, $3) returning id`, [externalId, kind, person])).rows[0]!.id;
    id.dmAda = await conversation('dm-ada', 'dm', id.ada);
    id.dmBob = await conversation('dm-bob', 'dm', id.bob);
    id.group = await conversation('group', 'group', null);
    for (const testCase of cases) {
      for (const row of ['mine', 'other-person', 'other-agent'] as const) {
        const spec = rows[row];
        await testCase.seed(tx, { tag: tagOf(testCase.table, row), agent: spec.agent(), person: spec.person(), conversation: spec.conversation() });
      }
    }
    // A line said to everyone in the group, which no direct scope reads.
    await tx.query(`insert into messages (conversation_id, role, person_id, content, visibility) values ($1, 'person', $2, 'said-in-the-group', 'conversation')`, [id.group, id.bob]);
  });
});

afterAll(async () => {
  await test?.cleanup();
});

const scoutForAda = (): Scope => ({ agentId: id.scout, personId: id.ada, audience: 'private', conversationId: id.dmAda });

async function readAs(scope: Scope | 'ops', sql: string): Promise<string[]> {
  const run = async (tx: Transaction) => (await tx.query<{ tag: string }>(sql)).rows.map((row) => row.tag).sort();
  return scope === 'ops' ? db.adminScope('test: read every row as roster_ops', run) : db.withScope(scope, run);
}

describe('row-level security on every table that holds what people said', () => {
  it('is enabled and forced on every table of the schema but the short list that holds no content', async () => {
    const tables = await db.ownerScope('test: read the catalog', async (tx) =>
      (
        await tx.query<{ name: string; enabled: boolean; forced: boolean; policies: string }>(
          `select c.relname as name, c.relrowsecurity as enabled, c.relforcerowsecurity as forced,
                  (select count(*) from pg_policy p where p.polrelid = c.oid) as policies
           from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where n.nspname = 'public' and c.relkind in ('r', 'p')
           order by 1`,
        )
      ).rows,
    );
    const unprotected = tables.filter((table) => !(table.enabled && table.forced && Number(table.policies) > 0)).map((table) => table.name);
    expect(unprotected.sort()).toEqual(Object.keys(tablesWithoutContent).sort());
    // Every content table is covered by a case below, so none escapes the two-way check.
    const protectedTables = tables.map((table) => table.name).filter((name) => !(name in tablesWithoutContent));
    expect(protectedTables.filter((name) => name !== 'conversations' && !cases.some((testCase) => testCase.table === name))).toEqual([]);
  });

  it.each(cases.map((testCase) => [testCase.table, testCase] as const))('%s: the scope reads its own rows and none of another agent or person', async (table, testCase) => {
    // Positive control: the rows are there.
    const all = await readAs('ops', testCase.read);
    expect(all).toEqual(expect.arrayContaining(tagsFor(table, ['mine', 'other-person', 'other-agent'])));
    // Rows other cases seeded on the way (a fact under an embedding, a case under a run) are not this table's.
    const own = (tag: string) => tag.startsWith(`${table}:`) || (table === 'link_codes' && /^[A-Z]{8}$/.test(tag));
    if (testCase.seen.length === 0) {
      // Only roster_ops reads it: the runtime role has no right to it at all.
      await expect(readAs(scoutForAda(), testCase.read)).rejects.toThrow(/permission denied/);
      return;
    }
    const seen = (await readAs(scoutForAda(), testCase.read)).filter(own);
    expect(seen).toEqual(tagsFor(table, testCase.seen));
    // No scope, no rows.
    expect((await db.query<{ tag: string }>(testCase.read)).rows).toEqual([]);
  });

  it('conversations: a person reads their own direct conversation and the one the turn runs in, never another', async () => {
    const read = 'select external_id as tag from conversations';
    expect(await readAs('ops', read)).toEqual(expect.arrayContaining(['dm-ada', 'dm-bob', 'group']));
    expect((await readAs(scoutForAda(), read)).filter((tag) => !tag.startsWith('episode-'))).toEqual(['dm-ada']);
    expect(await readAs({ agentId: id.scout, personId: id.ada, audience: 'group', conversationId: id.group }, read)).toEqual(['group']);
    expect(await readAs({ agentId: id.scout, personId: id.bob, audience: 'private', conversationId: id.dmBob }, read)).toEqual(
      expect.not.arrayContaining(['dm-ada']),
    );
  });

  it("messages: the group's lines only inside a turn of that group, and no private line there", async () => {
    const read = 'select content as tag from messages';
    const inGroup = await readAs({ agentId: id.scout, personId: id.ada, audience: 'group', conversationId: id.group }, read);
    expect(inGroup).toEqual(['said-in-the-group']);
    expect(await readAs(scoutForAda(), read)).not.toContain('said-in-the-group');
  });

  it('refuses, in the database, a write into another scope, and accepts one into its own', async () => {
    const write = (person: string) =>
      db.withScope(scoutForAda(), (tx) =>
        tx.query(`insert into learning_events (agent_id, person_id, kind, text) values ($1, $2, 'correction', 'written')`, [id.scout, person]),
      );
    await expect(write(id.bob)).rejects.toThrow(/row-level security/);
    await expect(write(id.ada)).resolves.toBeDefined();
    const reply = (agent: string) =>
      db.withScope(scoutForAda(), (tx) =>
        tx.query(`insert into messages (conversation_id, role, person_id, agent_id, content, visibility) values ($1, 'agent', $2, $3, 'reply', 'pair')`, [id.dmAda, id.ada, agent]),
      );
    await expect(reply(id.coder)).rejects.toThrow(/row-level security/);
    await expect(reply(id.scout)).resolves.toBeDefined();
  });

  it('runs everyday work as roles that are neither superuser nor able to bypass row-level security', async () => {
    const roles = await db.ownerScope('test: read the roles', async (tx) =>
      (
        await tx.query<{ name: string; superuser: boolean; bypass: boolean }>(
          `select rolname as name, rolsuper as superuser, rolbypassrls as bypass from pg_roles
           where rolname in (current_user, 'roster_app', 'roster_ops') order by 1`,
        )
      ).rows,
    );
    expect(roles.map((role) => role.name)).toEqual(expect.arrayContaining(['roster_app', 'roster_ops']));
    // The owner is the connecting role: on the embedded database roster_owner, never a superuser;
    // on TEST_DATABASE_URL whatever role the test was given (tests/server/managed-postgres.test.ts tries a plain one).
    const checked = test.kind === 'embedded' ? roles : roles.filter((role) => role.name.startsWith('roster_'));
    expect(checked.length).toBe(test.kind === 'embedded' ? 3 : 2);
    expect(checked.filter((role) => role.superuser || role.bypass)).toEqual([]);
  });

  it('reads the scope once per statement in every policy: each roster_scope_*() call is a sub-select (an init plan), not a call per row', async () => {
    const policies = await db.ownerScope('test: read the policies', async (tx) =>
      (
        await tx.query<{ name: string; expression: string }>(
          `select pol.polname as name, concat_ws(' ', pg_get_expr(pol.polqual, pol.polrelid), pg_get_expr(pol.polwithcheck, pol.polrelid)) as expression
           from pg_policy pol join pg_class c on c.oid = pol.polrelid join pg_namespace n on n.oid = c.relnamespace
           where n.nspname = 'public' and concat_ws(' ', pg_get_expr(pol.polqual, pol.polrelid), pg_get_expr(pol.polwithcheck, pol.polrelid)) ~ 'roster_scope_[a-z]+\\(\\)'
           order by 1`,
        )
      ).rows,
    );
    // The positive control: the policies on facts and messages are among those that read the scope.
    expect(policies.map((policy) => policy.name)).toEqual(expect.arrayContaining(['facts_select', 'facts_insert', 'messages_app_select']));
    const perRow = policies.filter((policy) => [...policy.expression.matchAll(/(\S+\s*)roster_scope_[a-z]+\(\)/g)].some((call) => call[1]!.trim() !== 'SELECT'));
    expect(perRow.map((policy) => policy.name)).toEqual([]);
  });

  it('lets roster_ops read every table and sequence of the schema, as a server backup (pg_dump as roster_ops) must', async () => {
    const relations = await db.ownerScope('test: read the grants', async (tx) =>
      (
        await tx.query<{ name: string; kind: string; readable: boolean }>(
          `select c.relname as name, c.relkind::text as kind,
                  case when c.relkind = 'S' then has_sequence_privilege('roster_ops', c.oid, 'select')
                       else has_table_privilege('roster_ops', c.oid, 'select') end as readable
           from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where n.nspname = 'public' and c.relkind in ('r', 'p', 'S')
           order by 1`,
        )
      ).rows,
    );
    // The positive control: the tables that hold what people said, and a sequence, are among those checked.
    expect(relations.map((relation) => relation.name)).toEqual(expect.arrayContaining(['facts', 'messages', 'tombstones', 'channel_inbox_id_seq']));
    expect(relations.filter((relation) => !relation.readable).map((relation) => relation.name)).toEqual([]);
  });
});
