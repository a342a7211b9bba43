import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readBackupHeader, restoreReplayingForgets } from '../support/backup-file.js';
import { onServer, requireServerUrl } from '../support/installation.js';
import { runRoster, tempDataDir } from '../support/roster-process.js';

/**
 * `roster backup` and `roster restore` on a server Postgres, through the
 * built CLI, as a managed service hands one out: each database owned by a
 * plain role (no superuser, no BYPASSRLS) with pgvector created by an
 * administrator. Run by `npm run test:server` (TEST_DATABASE_URL).
 */
const adminUrl = requireServerUrl();

const cleanups: Array<() => Promise<unknown> | void> = [];
afterAll(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const suffix = randomUUID().replaceAll('-', '').slice(0, 12);
const role = `roster_backup_${suffix}`;
const password = randomUUID();

/** A new, empty database owned by the plain role, pgvector created in it by the administrator; its URL as that role. */
async function database(name: string): Promise<string> {
  const full = `roster_${name}_${suffix}`;
  await onServer(adminUrl, (client) => client.query(`create database ${full} owner ${role}`));
  cleanups.push(() => onServer(adminUrl, (client) => client.query(`drop database if exists ${full} with (force)`)));
  const url = new URL(adminUrl);
  url.pathname = `/${full}`;
  await onServer(url.toString(), (client) => client.query('create extension if not exists vector'));
  url.username = role;
  url.password = password;
  return url.toString();
}

/** The lines a command wrote for people, without the JSON log lines. */
const said = (stderr: string) => stderr.trim().split('\n').filter((line) => line !== '' && !line.startsWith('{'));

describe('roster backup and roster restore on a server Postgres', () => {
  it('backs up while a chat runs; restores into a new database whose audit verifies against the heads and whose facts are there; a later forget stays forgotten only with --replay-forgets-from; a database that is not empty is refused', async () => {
    await onServer(adminUrl, (client) => client.query(`create role ${role} login password '${password}' nosuperuser createrole nobypassrls`));
    cleanups.push(() => onServer(adminUrl, (client) => client.query(`drop role if exists ${role}`)));
    const key = randomBytes(32).toString('hex');
    const dataDir = tempDataDir({ fresh: true });
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const environment = (url: string) => ({ DATABASE_URL: url, ROSTER_SECRET_KEY: key, ROSTER_DATA_DIR: dataDir });
    const roster = async (env: Record<string, string>, ...args: string[]) => {
      const result = await runRoster(args, env, 120_000);
      expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(0);
      return result.stdout.trim();
    };
    const contentsOf = async (env: Record<string, string>) =>
      (JSON.parse(await roster(env, 'memory', 'list', '--agent', 'Scout', '--person', 'ada', '--json')) as Array<{ content: string }>).map((fact) => fact.content).sort();

    const sourceUrl = await database('source');
    const source = environment(sourceUrl);
    await roster(source, 'migrate');
    await roster(source, 'agent', 'add', '--name', 'Scout', '--job', 'finds things');
    await roster(source, 'person', 'add', 'ada');
    await roster(source, 'chat', '--agent', 'Scout', '--as', 'ada', 'remember that my bike is teal');
    await roster(source, 'chat', '--agent', 'Scout', '--as', 'ada', 'remember that my favourite tea is oolong');

    // The backup is taken while a chat runs beside it.
    const file = path.join(dataDir, 'server.backup');
    const [backup] = await Promise.all([
      roster(source, 'backup', '--out', file, '--json'),
      roster(source, 'chat', '--agent', 'Scout', '--as', 'ada', 'remember that my kite is red'),
    ]);
    expect(JSON.parse(backup)).toMatchObject({ file, sealed: true, database: 'server' });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const header = readBackupHeader(file);
    expect(header).toMatchObject({ format: 'roster-backup', database: 'server', sealed: true, schemaVersion: fs.readdirSync(new URL('../../migrations/', import.meta.url)).length });
    expect(header.heads.map((head) => head.agent)).toEqual(['Scout']);
    // Sealed: none of ada's words is in the file as written, nor the role's password.
    const bytes = fs.readFileSync(file).toString('latin1');
    for (const word of ['teal', 'oolong', 'favourite tea', password]) expect(bytes).not.toContain(word);

    // After the backup, ada's favourite tea is forgotten on the running database.
    const facts = JSON.parse(await roster(source, 'memory', 'list', '--agent', 'Scout', '--person', 'ada', '--json')) as Array<{ id: string; content: string }>;
    const tea = facts.find((fact) => fact.content === 'my favourite tea is oolong');
    expect(tea).toBeDefined();
    await roster(source, 'memory', 'forget', '--agent', 'Scout', '--fact', tea!.id);

    // Restored with the newer database's tombstones: the bike is there (positive control), the tea is not.
    const replayed = environment(await database('replayed'));
    await restoreReplayingForgets(replayed, file, sourceUrl, header.heads[0]!.head, { kept: 'my bike is teal', forgotten: 'my favourite tea is oolong' });
    // Still as the plain role: the restore gave the tables to no one else, and row-level security still applies.
    const owners = await onServer(adminUrl.replace(/\/[^/]*$/, `/roster_replayed_${suffix}`), async (client) =>
      (await client.query<{ tableowner: string }>(`select distinct tableowner from pg_tables where schemaname = 'public'`)).rows.map((row) => row.tableowner),
    );
    expect(owners).toEqual([role]);

    // Restored without them: the forgotten fact comes back, which is what the option is for.
    const plain = environment(await database('plain'));
    await roster(plain, 'restore', file);
    expect(await contentsOf(plain)).toContain('my favourite tea is oolong');
    expect((await runRoster(['audit', 'verify', '--agent', 'Scout', '--expect', header.heads[0]!.head], plain)).code).toBe(0);

    // A database that is not empty (the source) is refused in one line, and keeps what it held.
    const refused = await runRoster(['restore', file], source, 120_000);
    expect(refused.code, refused.stdout).toBe(1);
    expect(said(refused.stderr)).toHaveLength(1);
    expect(said(refused.stderr)[0]).toMatch(/^roster restore: .*(not empty|already holds)/);
    expect(await contentsOf(source)).toEqual(['my bike is teal', 'my kite is red']);
  });
});
