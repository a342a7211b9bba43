import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeLinkedDeviceStoreConformance } from '@roster/channels/testing';
import { loadMigrations, migrate } from '@roster/db';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLinkedDeviceStore } from './linked-devices.js';

let test: TestDatabase;
beforeAll(async () => {
  test = await openTestDatabase();
});
afterAll(async () => {
  await test?.cleanup();
});

describeLinkedDeviceStoreConformance('Postgres (the host’s)', (account) => createLinkedDeviceStore(test.database, 'whatsapp', account));

describe('a linked device’s session in Postgres', () => {
  it('keeps exactly the sealed values it is given, in WhatsApp’s tables, as roster_ops', async () => {
    const store = createLinkedDeviceStore(test.database, 'whatsapp', 'stored');
    await store.showCode('sealed-code');
    await store.saveCredentials('+4915550000000', 'sealed-credentials');
    await store.writeKeys([{ kind: 'pre-key', id: '1', sealed: 'sealed-key' }]);
    const rows = await test.database.adminScope('test: read the stored rows', async (tx) => ({
      sessions: (await tx.query(`select account, status, phone, qr_sealed, creds_sealed, linked_at is not null as linked from whatsapp_sessions where account = 'stored'`)).rows,
      keys: (await tx.query(`select account, kind, id, value_sealed from whatsapp_keys where account = 'stored'`)).rows,
    }));
    expect(rows).toEqual({
      sessions: [{ account: 'stored', status: 'linked', phone: '+4915550000000', qr_sealed: null, creds_sealed: 'sealed-credentials', linked: true }],
      keys: [{ account: 'stored', kind: 'pre-key', id: '1', value_sealed: 'sealed-key' }],
    });
  });

  it('refuses a channel that has no tables for it', () => {
    expect(() => createLinkedDeviceStore(test.database, 'signal', 'default')).toThrow(/whatsapp only/);
    // Its control: WhatsApp's store is made.
    expect(createLinkedDeviceStore(test.database, 'whatsapp', 'default').account).toBe('default');
  });

  it('reads no session from a database not migrated to WhatsApp’s tables yet (the doctor asks before roster migrate)', async () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-migrations-'));
    const before = await openTestDatabase({ migrate: false });
    try {
      for (const migration of loadMigrations().filter((entry) => entry.version < 20)) fs.writeFileSync(path.join(folder, `${migration.name}.sql`), migration.sql);
      expect((await migrate(before.database, { dir: folder })).version).toBe(19);
      expect(await createLinkedDeviceStore(before.database, 'whatsapp', 'default').read()).toBeNull();
      // Its control: a write needs the tables, and says they are missing.
      await expect(createLinkedDeviceStore(before.database, 'whatsapp', 'default').showCode('sealed')).rejects.toThrow(/whatsapp_sessions/);
    } finally {
      await before.cleanup();
      fs.rmSync(folder, { recursive: true, force: true });
    }
  });
});
