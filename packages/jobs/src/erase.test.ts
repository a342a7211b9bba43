import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { defaultMigrationsDir, migrate, openEmbeddedDatabase, type Database, type Scope } from '@roster/db';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createHashingEmbedder, createMemory, type Memory, type Provenance } from '@roster/memory';
import { testInstallationKey } from '@roster/memory/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eraseForgotten } from './erase.js';

/**
 * The erase job over a real database (PGlite in memory, or the server
 * Postgres of TEST_DATABASE_URL), fed by real forgets through memory's API.
 * tests/forget-disk.test.ts scans the files of a data folder after it.
 */

let test: TestDatabase;
let database: Database;
let memory: Memory;
let ada: Scope;
let bob: Scope;

const said = (scope: Scope): Provenance => ({ actor: { kind: 'person', id: scope.personId! }, channel: 'cli', explicit: true });

async function tell(scope: Scope, content: string): Promise<string> {
  return (await memory.remember(scope, { content, provenance: said(scope) })).fact.id;
}

/** The erase rows of the outbox: their key, owner and payload. */
async function eraseRows() {
  return database.adminScope('test: read the erase jobs of the outbox', async (tx) => {
    const { rows } = await tx.query<{ id: string; dedupe_key: string; agent_id: string | null; person_id: string | null; payload: { tables: string[] } }>(
      `select id, dedupe_key, agent_id, person_id, payload from outbox where queue = 'erase' order by created_at, id`,
    );
    return rows;
  });
}

/** The file a table's rows live in: a rewrite gives it a new one. */
async function fileOf(table: string): Promise<string> {
  return database.ownerScope('test: read where a table lives', async (tx) => {
    const { rows } = await tx.query<{ file: string }>(`select pg_relation_filenode($1::regclass)::text as file`, [table]);
    return rows[0]!.file;
  });
}

describe('the erase job', () => {
  beforeEach(async () => {
    test = await openTestDatabase();
    database = test.database;
    const ids = await database.adminScope('test: seed an agent and two people', async (tx) => {
      const agent = await tx.query<{ id: string }>(`insert into agents (name, job) values ('Scout', 'finds things') returning id`);
      const people = await tx.query<{ id: string; name: string }>(`insert into people (name, role) values ('Ada', 'owner'), ('Bob', 'member') returning id, name`);
      return { agent: agent.rows[0]!.id, ada: people.rows.find((row) => row.name === 'Ada')!.id, bob: people.rows.find((row) => row.name === 'Bob')!.id };
    });
    ada = { agentId: ids.agent, personId: ids.ada, audience: 'private' };
    bob = { agentId: ids.agent, personId: ids.bob, audience: 'private' };
    memory = createMemory({ database, embedder: createHashingEmbedder(), key: testInstallationKey });
    await memory.prepare();
  });
  afterEach(async () => {
    await test.cleanup();
  });

  it('is queued once for a burst of forgets, rewrites the tables they reached, and a forget after it queues the next', async () => {
    const cafe = await tell(ada, 'my favourite cafe is Zephyrquokka Roasters');
    const locker = await tell(ada, 'my locker is the one by the window');
    const dog = await tell(bob, 'my dog is called Biscuitfang');
    // Positive control: remembering queues no erase.
    expect(await eraseRows()).toEqual([]);

    await memory.forget(ada, cafe, said(ada));
    await memory.forget(bob, dog, said(bob));
    const [pending, ...others] = await eraseRows();
    expect(others).toEqual([]);
    // One erase for both, belonging to no agent or person, naming tables and nothing they said.
    expect(pending).toMatchObject({ dedupe_key: 'erase:pending', agent_id: null, person_id: null });
    expect(pending!.payload.tables).toEqual(expect.arrayContaining(['facts', 'fact_embeddings', 'messages', 'learning_events', 'episodes', 'lessons', 'outbox']));
    expect(JSON.stringify(pending!.payload)).not.toMatch(/zephyrquokka|biscuitfang/i);

    const before = await fileOf('facts');
    const report = await eraseForgotten(database, { tables: pending!.payload.tables });
    expect(report).toMatchObject({ database: test.kind, queued: 1, ignored: [] });
    expect(report.tables).toEqual([...pending!.payload.tables].sort());
    expect(JSON.stringify(report)).not.toMatch(/zephyrquokka|biscuitfang/i);
    if (test.kind === 'embedded') {
      expect(await fileOf('facts')).not.toBe(before);
      expect(report.walSegmentsRemoved).toBeGreaterThanOrEqual(1);
    } else {
      // A server Postgres vacuums in place: no table is rewritten, and its WAL is its own.
      expect(await fileOf('facts')).toBe(before);
      expect(report.walSegmentsRemoved).toBeNull();
    }
    expect((await eraseRows()).map((row) => row.dedupe_key)).toEqual([`erase:done:${pending!.id}`]);

    // What was not forgotten is untouched.
    expect((await memory.get(ada, locker)).content).toBe('my locker is the one by the window');

    // The next forget queues the next erase.
    await memory.forget(ada, locker, said(ada));
    const rows = await eraseRows();
    expect(rows.map((row) => row.dedupe_key)).toEqual([`erase:done:${pending!.id}`, 'erase:pending']);
    // Nothing was pending for a run by hand to take over but that one; it covers every table that holds people's words.
    const byHand = await eraseForgotten(database);
    expect(byHand.queued).toBe(1);
    expect(byHand.tables).toEqual(expect.arrayContaining(['facts', 'messages', 'memory_events', 'tombstones', 'conversations']));
    expect(byHand.tables).not.toContain('agents');
  });

  it('keeps no planner sample of words; a sample taken by hand is cleared by the next erase, and the other columns keep theirs', async () => {
    const cafe = await tell(ada, 'my favourite cafe is Zephyrquokka Roasters');
    const locker = await tell(ada, 'my locker code is Marzipanwombat');
    /** Every value the planner keeps for the facts table's columns, as the owner reads it (pg_stats), in lower case. */
    const samples = () =>
      database.ownerSession('test: read the planner’s samples of facts', async (session) => {
        // pg_stats hides the samples of a table that forces row-level security even from its owner: lift it for this read only.
        await session.query('begin');
        try {
          await session.query('alter table facts no force row level security');
          const { rows } = await session.query<{ attname: string; most_common_vals: string | null; histogram_bounds: string | null }>(
            `select attname, most_common_vals::text, histogram_bounds::text from pg_stats where schemaname = current_schema() and tablename = 'facts'`,
          );
          return { columns: rows.map((row) => row.attname).sort(), text: JSON.stringify(rows).toLowerCase() };
        } finally {
          await session.query('rollback');
        }
      });
    const analyze = () => database.ownerSession('test: analyze as the vacuum job does', (session) => session.query('analyze facts'));

    await analyze();
    const sampled = await samples();
    // Positive control: ANALYZE ran and sampled the table's other columns.
    expect(sampled.columns).toEqual(expect.arrayContaining(['agent_id', 'person_id', 'trust', 'category']));
    expect(sampled.columns).not.toContain('content');
    expect(sampled.columns).not.toContain('search_vector');
    expect(sampled.text).not.toMatch(/zephyrquokka|marzipanwombat/);

    // An operator turns the statistics of the content back on: ANALYZE copies the words into the catalog.
    await database.ownerScope('test: turn statistics on by hand', (tx) => tx.query('alter table facts alter column content set statistics 100'));
    await analyze();
    expect((await samples()).text).toMatch(/zephyrquokka/);

    await memory.forget(ada, cafe, said(ada));
    const report = await eraseForgotten(database);
    expect(report.statistics).toBeGreaterThanOrEqual(3);
    const after = await samples();
    expect(after.text).not.toMatch(/zephyrquokka/);
    // The statistics are off again, and what was not forgotten is untouched.
    await analyze();
    expect((await samples()).text).not.toMatch(/zephyrquokka/);
    expect(after.columns).toEqual(expect.arrayContaining(['agent_id', 'trust']));
    expect((await memory.get(ada, locker)).content).toBe('my locker code is Marzipanwombat');
  });

  it('leaves alone a name that is not a table holding people’s words', async () => {
    const report = await eraseForgotten(database, { tables: ['facts', 'agents', 'no_such_table'] });
    expect(report).toMatchObject({ tables: ['facts'], ignored: ['agents', 'no_such_table'], queued: 0 });
  });
});

describe('an installation whose planner sampled words before this version', () => {
  it('loses the samples at the upgrade, which queues an erase that takes them off', async () => {
    const earlier = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-migrations-'));
    const upgraded = await openTestDatabase({ migrate: false });
    try {
      // The migrations before the one that turned the statistics of words off.
      for (const name of fs.readdirSync(defaultMigrationsDir).filter((name) => name.endsWith('.sql') && name < '0025')) {
        fs.copyFileSync(path.join(defaultMigrationsDir, name), path.join(earlier, name));
      }
      await migrate(upgraded.database, { dir: earlier });
      const agent = await upgraded.database.adminScope('test: seed an agent and a person', async (tx) => ({
        agentId: (await tx.query<{ id: string }>(`insert into agents (name, job) values ('Scout', 'finds things') returning id`)).rows[0]!.id,
        personId: (await tx.query<{ id: string }>(`insert into people (name, role) values ('Ada', 'owner') returning id`)).rows[0]!.id,
      }));
      const scope: Scope = { ...agent, audience: 'private' };
      const earlierMemory = createMemory({ database: upgraded.database, embedder: createHashingEmbedder(), key: testInstallationKey });
      await earlierMemory.prepare();
      const cafe = await earlierMemory.remember(scope, { content: 'my favourite cafe is Zephyrquokka Roasters', provenance: said(scope) });
      await earlierMemory.remember(scope, { content: 'my locker code is Marzipanwombat', provenance: said(scope) });
      const wordsSampled = (word: string) =>
        upgraded.database.ownerSession('test: look for the words in the planner’s samples', async (session) => {
          await session.query('begin');
          try {
            for (const table of ['facts', 'messages']) await session.query(`alter table ${table} no force row level security`);
            const { rows } = await session.query<{ found: boolean }>(
              `select exists (select 1 from pg_stats where schemaname = current_schema() and lower(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '') || coalesce(most_common_elems::text, '')) like $1) as found`,
              [`%${word}%`],
            );
            return rows[0]!.found;
          } finally {
            await session.query('rollback');
          }
        });
      await upgraded.database.ownerSession('test: analyze as the vacuum job did', (session) => session.query('analyze facts'));
      // The forget of that version, as it left the row (this version's forget reaches tables that schema has not got yet).
      await upgraded.database.ownerSession('test: forget the cafe as that version did', (session) =>
        session.query(`update facts set content = '', content_hash = '', trust = 'forgotten' where id = $1`, [cafe.fact.id]),
      );
      // Positive control: before the upgrade ANALYZE had copied the words into the catalog, and the forget left them there.
      expect(await wordsSampled('zephyrquokka')).toBe(true);

      const report = await migrate(upgraded.database);
      expect(report.applied.map((migration) => migration.name)).toContain('0025_statistics_without_words');
      expect(await wordsSampled('zephyrquokka')).toBe(false);
      const pending = await upgraded.database.adminScope('test: the erase the upgrade queued', async (tx) =>
        (await tx.query<{ payload: { tables: string[] } }>(`select payload from outbox where queue = 'erase' and dedupe_key = 'erase:pending'`)).rows,
      );
      expect(pending).toHaveLength(1);
      expect(pending[0]!.payload.tables).toContain('facts');
      const erased = await eraseForgotten(upgraded.database, { tables: pending[0]!.payload.tables });
      expect(erased).toMatchObject({ queued: 1, tables: expect.arrayContaining(['facts']) });
      // Analysed again: the words stay out.
      await upgraded.database.ownerSession('test: analyze again', (session) => session.query('analyze facts'));
      expect(await wordsSampled('zephyrquokka')).toBe(false);
      // The fact that stays is still remembered.
      expect((await earlierMemory.search(scope, 'locker code')).map((hit) => hit.fact.content)).toContain('my locker code is Marzipanwombat');
    } finally {
      await upgraded.cleanup();
      fs.rmSync(earlier, { recursive: true, force: true });
    }
  });
});

describe('the erase job on a folder an earlier version wrote', () => {
  it('passes every WAL segment that version recycled, and deletes each', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-erase-'));
    const pglite = path.join(dir, 'pglite');
    try {
      const first = await openEmbeddedDatabase(pglite);
      await migrate(first);
      await first.close();
      // The host process that served it leaves once its last client is gone; only then may PGlite open the folder itself.
      for (const deadline = Date.now() + 60_000; fs.existsSync(path.join(pglite, 'roster.lock')) && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(fs.existsSync(path.join(pglite, 'roster.lock'))).toBe(false);
      // PGlite as an earlier version ran it: recycling WAL segments, so that old ones wait, renamed, ahead of the current one.
      const earlier = await PGlite.create(pglite, { extensions: { vector } });
      await earlier.exec('create table scratch (line text)');
      for (let round = 0; round < 6; round += 1) {
        await earlier.exec(`insert into scratch select 'Zephyrquokka ' || repeat('x', 300) from generate_series(1, 15000)`);
        await earlier.exec('checkpoint');
      }
      await earlier.exec('drop table scratch');
      await earlier.close();
      const walDir = path.join(pglite, 'pg_wal');
      const segments = () => fs.readdirSync(walDir).filter((name) => /^[0-9A-F]{24}$/.test(name)).sort();
      const holding = () => segments().filter((name) => fs.readFileSync(path.join(walDir, name)).includes('Zephyrquokka'));
      // Positive control: the words are in more than one segment (the current one, and old ones renamed ahead of it).
      const before = segments();
      expect(before.length).toBeGreaterThan(1);
      expect(holding().length).toBeGreaterThan(1);

      const database = await openEmbeddedDatabase(pglite);
      let report;
      try {
        report = await eraseForgotten(database);
      } finally {
        await database.close();
      }
      expect(report.walSegmentsRemoved).toBe(before.length);
      const after = segments();
      expect(after).toHaveLength(1);
      expect(before).not.toContain(after[0]);
      expect(holding()).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
