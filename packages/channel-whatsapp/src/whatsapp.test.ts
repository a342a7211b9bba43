import { describeChannelConformance } from '@roster/channels/conformance';
import { testInstallationKey } from '@roster/config/testing';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { afterAll, beforeAll } from 'vitest';
import { linkThrough, startFakeWhatsApp } from './fake-whatsapp.js';

// The session lives in a database of its own here; the suite's core has another.
let sessions: TestDatabase;
beforeAll(async () => {
  sessions = await openTestDatabase();
  const fake = await startFakeWhatsApp({ database: sessions.database, key: testInstallationKey });
  await linkThrough(fake, { database: sessions.database, key: testInstallationKey });
  await fake.close();
});
afterAll(async () => {
  await sessions?.cleanup();
});

describeChannelConformance('whatsapp', {
  async start() {
    const fake = await startFakeWhatsApp({ database: sessions.database, key: testInstallationKey });
    fake.adapter = fake.makeAdapter();
    return fake;
  },
});
