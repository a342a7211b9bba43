import { randomUUID } from 'node:crypto';
import { migrate, openServerDatabase, type Database } from '@roster/db';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { createRuntime } from '@roster/runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { onServer, requireServerUrl } from '../support/installation.js';

/**
 * Roster on a server Postgres as a managed service hands it out: the role in
 * DATABASE_URL owns its database and may create roles, but is no superuser
 * and cannot bypass row-level security; pgvector was created by an
 * administrator. Run by `npm run test:server`, which needs TEST_DATABASE_URL
 * (an administrator's connection to a Postgres with pgvector); `npm test` has
 * no server with pgvector to try, and leaves this suite out rather than skip it.
 */
const adminUrl = requireServerUrl();

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('a managed Postgres, as a plain role', () => {
  it('migrates, remembers, recalls and forgets with scopes enforced, as a role that is neither superuser nor BYPASSRLS', async () => {
    const suffix = randomUUID().replaceAll('-', '').slice(0, 12);
    const role = `roster_main_${suffix}`;
    const name = `roster_managed_${suffix}`;
    const password = randomUUID();
    await onServer(adminUrl, async (client) => {
      await client.query(`create role ${role} login password '${password}' nosuperuser createrole nobypassrls`);
      await client.query(`create database ${name} owner ${role}`);
    });
    cleanups.push(() =>
      onServer(adminUrl, async (client) => {
        await client.query(`drop database if exists ${name} with (force)`);
        await client.query(`drop role if exists ${role}`);
      }),
    );
    const databaseUrl = new URL(adminUrl);
    databaseUrl.pathname = `/${name}`;
    await onServer(databaseUrl.toString(), (client) => client.query('create extension if not exists vector'));
    const asRole = new URL(databaseUrl);
    asRole.username = role;
    asRole.password = password;

    const database: Database = await openServerDatabase(asRole.toString());
    cleanups.push(() => database.close());
    await migrate(database);
    const roster = await createRuntime({ config: parseConfig({}), database, key: testInstallationKey });
    const scout = await roster.core.directory.addAgent({ name: 'Scout', job: 'finds things' });
    const coder = await roster.core.directory.addAgent({ name: 'Coder', job: 'writes code' });
    const ada = await roster.core.directory.addPerson({ name: 'Ada', role: 'owner' });
    const say = (agent: string, text: string) =>
      roster.core.handle({ channel: 'cli', conversation: { externalId: `dm-${ada.id}`, kind: 'dm' }, sender: { personId: ada.id }, text }, { agent });

    expect((await say('Scout', 'remember that my bike is blue')).replies[0]?.text).toBe('Noted: your bike is blue');
    expect((await say('Scout', 'what do you know about bike')).replies[0]?.text).toBe('- your bike is blue');
    // The negative control: the other agent knows nothing of it.
    expect((await say('Coder', 'what do you know about bike')).replies[0]?.text).toBe("I don't know anything about bike yet.");
    expect((await say('Scout', 'forget that my bike is blue')).replies[0]?.text).toBe('Forgotten.');
    expect((await say('Scout', 'what do you know about bike')).replies[0]?.text).toBe("I don't know anything about bike yet.");
    expect(scout.id).not.toBe(coder.id);

    const attributes = await onServer(adminUrl, async (client) =>
      (await client.query<{ rolsuper: boolean; rolbypassrls: boolean }>('select rolsuper, rolbypassrls from pg_roles where rolname = $1', [role])).rows[0],
    );
    expect(attributes).toEqual({ rolsuper: false, rolbypassrls: false });
  });
});
