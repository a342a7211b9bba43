/**
 * What keeping WhatsApp's session in the database, sealed, costs against
 * baileys' own store of loose JSON files (useMultiFileAuthState, which
 * Roster does not use: unsealed files beside the data). Both stores are
 * driven the way baileys drives them: a pre-key upload (30 keys at once), a
 * Signal session read and written per message, the credentials saved, and a
 * whole message encrypted by baileys' Signal repository through the store,
 * with and without baileys' key cache (makeCacheableSignalKeyStore, which
 * the adapter puts in front of the store). Embedded database (PGlite) in a
 * temporary folder; the same operations, in the same order, side by side.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WhatsAppSession } from '@roster/channel-whatsapp';
import { testInstallationKey } from '@roster/config/testing';
import { migrate, openEmbeddedDatabase } from '@roster/db';
import { createLinkedDeviceStore } from '@roster/gateway';
import {
  addTransactionCapability,
  Curve,
  generateSignalPubKey,
  getNextPreKeys,
  initAuthCreds,
  makeCacheableSignalKeyStore,
  useMultiFileAuthState,
  type AuthenticationCreds,
  type SignalKeyStore,
} from 'baileys';
import { makeLibSignalRepository } from 'baileys/lib/Signal/libsignal.js';
import type { ILogger } from 'baileys/lib/Utils/logger.js';
import { progress, type BenchmarkReport, type ResultTable } from './report.js';

export const title = 'WhatsApp: the sealed session in the database against loose files';

const quiet: ILogger = { level: 'silent', child: () => quiet, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
const transactions = { maxCommitRetries: 3, delayBetweenTriesMs: 10 };

interface Store {
  name: string;
  creds: AuthenticationCreds;
  keys: SignalKeyStore;
  saveCreds(): Promise<void>;
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function time(rounds: number, step: (round: number) => unknown): Promise<number[]> {
  const times: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    const started = performance.now();
    await step(round);
    times.push(performance.now() - started);
  }
  return times;
}

export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  const rounds = Number(args[0] ?? 200);
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-bench-whatsapp-'));
  const database = await openEmbeddedDatabase(path.join(folder, 'pglite'));
  try {
    await migrate(database);
    const sealed = new WhatsAppSession(createLinkedDeviceStore(database, 'whatsapp', 'bench'), testInstallationKey);
    const opened = await sealed.authState();
    Object.assign(opened.state.creds, { me: { id: '4915550000000:12@s.whatsapp.net', name: 'Roster' } });
    const files = await useMultiFileAuthState(path.join(folder, 'files'));
    Object.assign(files.state.creds, { me: { id: '4915550000000:12@s.whatsapp.net', name: 'Roster' } });
    const stores: Store[] = [
      { name: 'database, sealed (Roster)', creds: opened.state.creds, keys: opened.state.keys, saveCreds: opened.saveCreds },
      { name: 'JSON files, unsealed (baileys)', creds: files.state.creds, keys: files.state.keys, saveCreds: files.saveCreds },
    ];

    const rows: string[][] = [];
    const record = (operation: string, store: Store, times: number[]) =>
      rows.push([operation, store.name, String(times.length), quantile(times, 0.5).toFixed(2), quantile(times, 0.95).toFixed(2)]);

    for (const store of stores) {
      progress(`whatsapp: ${store.name}`);
      const session = Buffer.alloc(1600, 7);
      record('pre-key upload (30 keys)', store, await time(Math.ceil(rounds / 10), async () => {
        const { update } = await getNextPreKeys({ creds: store.creds, keys: store.keys }, 30);
        Object.assign(store.creds, update);
      }));
      record('session write', store, await time(rounds, (round) => store.keys.set({ session: { [`49155510${String(round % 50).padStart(5, '0')}.0`]: session } })));
      record('session read', store, await time(rounds, (round) => store.keys.get('session', [`49155510${String(round % 50).padStart(5, '0')}.0`])));
      record('credentials saved', store, await time(Math.ceil(rounds / 4), () => store.saveCreds()));

      // A whole message, as baileys encrypts one: read the session, ratchet, write it back.
      const bobCreds = initAuthCreds();
      const bobKeys = addTransactionCapability(memoryKeys(), quiet, transactions);
      const { preKeys } = await getNextPreKeys({ creds: bobCreds, keys: bobKeys }, 1);
      const [preKeyId, preKey] = Object.entries(preKeys)[0]!;
      for (const cached of [false, true]) {
        const keys = addTransactionCapability(cached ? makeCacheableSignalKeyStore(store.keys, quiet) : store.keys, quiet, transactions);
        const repository = makeLibSignalRepository({ creds: store.creds, keys }, quiet);
        const jid = `4915552${cached ? 1 : 0}000000@s.whatsapp.net`;
        await repository.injectE2ESession({
          jid,
          session: {
            registrationId: bobCreds.registrationId,
            identityKey: generateSignalPubKey(bobCreds.signedIdentityKey.public),
            signedPreKey: { keyId: bobCreds.signedPreKey.keyId, publicKey: generateSignalPubKey(bobCreds.signedPreKey.keyPair.public), signature: bobCreds.signedPreKey.signature },
            preKey: { keyId: Number(preKeyId), publicKey: generateSignalPubKey(preKey.public) },
          },
        });
        const data = Buffer.from('a reply of a few words, as an agent writes one');
        record(`encrypt one message${cached ? ' (key cache in front)' : ''}`, store, await time(rounds, () => repository.encryptMessage({ jid, data })));
      }
    }
    // Curve is used so that a key pair's cost is visible beside the stores' (it is what every pre-key costs to make).
    const curve = await time(rounds, async () => Curve.generateKeyPair());
    const table: ResultTable = {
      title: 'Milliseconds per operation (median, 95th percentile)',
      columns: ['operation', 'store', 'runs', 'median ms', 'p95 ms'],
      rows: [...rows.sort((a, b) => a[0]!.localeCompare(b[0]!)), ['make one key pair (for scale)', '—', String(curve.length), quantile(curve, 0.5).toFixed(2), quantile(curve, 0.95).toFixed(2)]],
    };
    const median = (operation: string, store: number) => Number(rows.find((row) => row[0] === operation && row[1] === stores[store]!.name)![3]);
    const perMessage = median('encrypt one message (key cache in front)', 0);
    return {
      notes: [
        'Each store is driven as baileys drives it (`keys.get`/`keys.set`, `saveCreds`), on the embedded database (PGlite) in a temporary folder; the loose files are baileys’ `useMultiFileAuthState` in the same folder. A message’s encryption runs baileys’ own Signal repository over the store.',
        `The machine’s load average when the run ended: ${os.loadavg().map((value) => value.toFixed(1)).join(', ')} (1, 5, 15 minutes), on ${os.cpus().length} cores.`,
      ],
      tables: [table],
      findings: [
        `With baileys’ key cache in front, as the adapter runs it, a message costs ${perMessage.toFixed(2)} ms of store and Signal work with the sealed database store (median), against ${median('encrypt one message (key cache in front)', 1).toFixed(2)} ms with loose files: the cache takes the reads away, and what is left is the session written back, sealed, in a transaction.`,
      ],
    };
  } finally {
    await database.close();
    fs.rmSync(folder, { recursive: true, force: true });
  }
}

function memoryKeys(): SignalKeyStore {
  const data = new Map<string, unknown>();
  return {
    async get(kind, ids) {
      const found: Record<string, unknown> = {};
      for (const id of ids) if (data.has(`${kind}/${id}`)) found[id] = data.get(`${kind}/${id}`);
      return found as never;
    },
    async set(values) {
      for (const [kind, entries] of Object.entries(values)) {
        for (const [id, value] of Object.entries(entries ?? {})) {
          if (value === null) data.delete(`${kind}/${id}`);
          else data.set(`${kind}/${id}`, value);
        }
      }
    },
  };
}
