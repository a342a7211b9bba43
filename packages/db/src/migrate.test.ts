import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createPoolDatabase } from './database.js';
import { loadMigrations, migrate } from './migrate.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function fresh(): Promise<TestDatabase> {
  const test = await openTestDatabase({ migrate: false });
  cleanups.push(() => test.cleanup());
  return test;
}

async function ledger(test: TestDatabase) {
  return test.database.adminScope('test: read the ledger', async (tx) => {
    const { rows } = await tx.query<{ version: number; name: string; applied_at: Date }>(
      'select version, name, applied_at from roster_migrations order by version',
    );
    return rows;
  });
}

describe('migrate', () => {
  it('brings a fresh database to the latest version, with pgvector and the first tables', async () => {
    const test = await fresh();
    const files = loadMigrations();
    expect(files.length).toBeGreaterThan(0);

    const report = await migrate(test.database);

    expect(report.version).toBe(files.length);
    expect(report.applied.map((m) => m.name)).toEqual(files.map((m) => m.name));
    const info = await test.database.info();
    expect(info.pgvector).toMatch(/^0\.(8|9|\d\d)\./);
    const tables = await test.database.adminScope('test: list tables', async (tx) => {
      const { rows } = await tx.query<{ name: string }>(
        `select tablename as name from pg_tables where schemaname = 'public' order by tablename`,
      );
      return rows.map((row) => row.name);
    });
    expect(tables).toEqual(expect.arrayContaining(['agents', 'people', 'identities', 'facts', 'roster_migrations']));
  });

  it('changes nothing on a second run', async () => {
    const test = await fresh();
    await migrate(test.database);
    const before = await ledger(test);
    expect(before.length).toBeGreaterThan(0);

    const second = await migrate(test.database);

    expect(second.applied).toEqual([]);
    expect(second.version).toBe(before.length);
    expect(await ledger(test)).toEqual(before);
  });

  it('applies each migration once when two runners start at the same moment', async () => {
    const test = await fresh();
    const [first, second] = await Promise.all([migrate(test.database), migrate(test.database)]);
    const all = [...first.applied, ...second.applied].map((m) => m.version).sort((a, b) => a - b);
    expect(all).toEqual(loadMigrations().map((m) => m.version));
    expect((await ledger(test)).length).toBe(loadMigrations().length);
  });

  it('refuses a migration that was edited after it was applied, and changes nothing', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-migrations-'));
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    fs.writeFileSync(path.join(dir, '0001_first.sql'), 'create table first_table (id int);');
    const test = await fresh();
    await migrate(test.database, { dir });

    fs.writeFileSync(path.join(dir, '0001_first.sql'), 'create table first_table (id int, extra text);');
    fs.writeFileSync(path.join(dir, '0002_second.sql'), 'create table second_table (id int);');

    await expect(migrate(test.database, { dir })).rejects.toMatchObject({ code: 'migration_changed' });
    const exists = await test.database.ownerScope('test: look for the second table', async (tx) => {
      const { rows } = await tx.query<{ found: boolean }>(`select to_regclass('second_table') is not null as found`);
      return rows[0]?.found;
    });
    expect(exists).toBe(false);
  });

  it('rolls back a failing migration whole and records nothing for it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-migrations-'));
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    fs.writeFileSync(path.join(dir, '0001_ok.sql'), 'create table ok_table (id int);');
    fs.writeFileSync(path.join(dir, '0002_broken.sql'), 'create table half_table (id int);\nselect * from no_such_table;');
    const test = await fresh();

    await expect(migrate(test.database, { dir })).rejects.toThrow(/no_such_table/);

    const state = await test.database.ownerScope('test: inspect', async (tx) => {
      const versions = await tx.query<{ version: number }>('select version from roster_migrations order by version');
      const half = await tx.query<{ found: boolean }>(`select to_regclass('half_table') is not null as found`);
      return { versions: versions.rows.map((row) => row.version), half: half.rows[0]?.found };
    });
    expect(state).toEqual({ versions: [1], half: false });
  });

  it('rejects badly named or gapped migration files with a clear error', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-migrations-'));
    try {
      fs.writeFileSync(path.join(dir, '0001_a.sql'), 'select 1;');
      fs.writeFileSync(path.join(dir, '0003_c.sql'), 'select 1;');
      expect(() => loadMigrations(dir)).toThrow(/out of sequence/);
      fs.writeFileSync(path.join(dir, '2_b.sql'), 'select 1;');
      expect(() => loadMigrations(dir)).toThrow(/NNNN_words\.sql/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The advisory lock across separate sessions, on the machine's plain server
 * Postgres (PLAIN_POSTGRES_URL, default the local one). It has no pgvector, so
 * it runs migration files of its own; the lock and ledger code is the same.
 */
describe('migrate on a server Postgres, two processes at once', () => {
  const serverUrl = process.env.PLAIN_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

  it('applies each migration exactly once across two connection pools', async () => {
    const name = `roster_test_${randomUUID().replaceAll('-', '')}`;
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const pools = [new pg.Pool({ connectionString: url.toString(), max: 2 }), new pg.Pool({ connectionString: url.toString(), max: 2 })];
    const databases = pools.map((pool) => createPoolDatabase({ kind: 'server', location: name, pool }));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-migrations-'));
    cleanups.push(async () => {
      fs.rmSync(dir, { recursive: true, force: true });
      for (const database of databases) await database.close();
      const dropper = new pg.Client({ connectionString: serverUrl });
      await dropper.connect();
      await dropper.query(`drop database if exists ${name} with (force)`);
      await dropper.end();
    });
    // Each migration bumps a counter and sleeps, so overlapping runners would double-count or collide.
    fs.writeFileSync(path.join(dir, '0001_counter.sql'), 'create table applied_count (n int not null); insert into applied_count values (1); select pg_sleep(0.2);');
    fs.writeFileSync(path.join(dir, '0002_bump.sql'), 'update applied_count set n = n + 1; select pg_sleep(0.2);');
    fs.writeFileSync(path.join(dir, '0003_bump.sql'), 'update applied_count set n = n + 1; select pg_sleep(0.2);');

    const [first, second] = await Promise.all(databases.map((database) => migrate(database, { dir })));

    expect([...first!.applied, ...second!.applied].map((m) => m.version).sort()).toEqual([1, 2, 3]);
    const count = await databases[0]!.ownerScope('test: read the counter', async (tx) => {
      const { rows } = await tx.query<{ n: number }>('select n from applied_count');
      return rows;
    });
    expect(count).toEqual([{ n: 3 }]);
  });
});
