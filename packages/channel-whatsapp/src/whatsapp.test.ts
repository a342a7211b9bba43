import { describeChannelConformance } from '@roster/channel-host/conformance';
import { testInstallationKey } from '@roster/config/testing';
import { beforeAll } from 'vitest';
import { linkThrough, startFakeWhatsApp } from './fake-whatsapp.js';
import { MemoryLinkedDevices } from './memory-linked-devices.js';

// The session is kept as the host keeps it, here in memory (the suite's core has a database of its own).
const store = new MemoryLinkedDevices().store();
beforeAll(async () => {
  const fake = await startFakeWhatsApp({ store, key: testInstallationKey });
  await linkThrough(fake, { store, key: testInstallationKey });
  await fake.close();
});

describeChannelConformance('whatsapp', {
  async start() {
    const fake = await startFakeWhatsApp({ store, key: testInstallationKey });
    fake.adapter = fake.makeAdapter();
    return fake;
  },
});
