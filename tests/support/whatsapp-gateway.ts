/**
 * A gateway process serving WhatsApp, as `roster gateway` runs it
 * (startGateway over the data folder's database, migrated, with its
 * installation key), whose WhatsApp far side is the stand-in's socket
 * factory. Every socket it opens is also a TCP connection to the test's
 * number registry (WHATSAPP_REGISTRY, a loopback port): `open <number>` when
 * opened, closed with the socket, and with the process when it is killed,
 * so the test sees every socket of every process at one place, as
 * WhatsApp's servers see a number's connections. Run with `node --import
 * tsx`; prints `gateway is running` once started.
 */
import { channelVariables } from '@roster/channel-registry';
import { fakeBot, linkThrough, startFakeWhatsApp } from '@roster/channel-whatsapp/testing';
import { createLogger, loadInstallationKey, parseConfig } from '@roster/config';
import { migrate, openDatabase } from '@roster/db';
import { createLinkedDeviceStore, startGateway } from '@roster/gateway';
import { createRuntime } from '@roster/runtime';
import { registeredSockets } from './whatsapp-registry.js';

const config = parseConfig(process.env, channelVariables);
const logger = createLogger(config);
const database = await openDatabase({ config, logger });
await migrate(database);
const key = loadInstallationKey(config);
const runtime = await createRuntime({ config, database, logger, key });
const store = createLinkedDeviceStore(database, 'whatsapp', 'default');
const fake = await startFakeWhatsApp({ store, key });
// Linked once, as roster channel add whatsapp does (the first process to come links it; later ones find the link).
if ((await store.read())?.status !== 'linked') await linkThrough(fake, { store, key });

const socketFactory = registeredSockets(fake.socketFactory, Number(process.env.WHATSAPP_REGISTRY), fakeBot.number);

const gateway = await startGateway({
  config,
  database,
  core: runtime.core,
  audit: runtime.memory.audit,
  logger,
  key,
  webhooksOn: 'server',
  services: { whatsappSocketFactory: socketFactory },
});
process.stdout.write('gateway is running\n');
process.once('SIGTERM', () => {
  void gateway
    .stop()
    .then(() => fake.close())
    .then(() => database.close())
    .then(() => process.exit(0));
});
