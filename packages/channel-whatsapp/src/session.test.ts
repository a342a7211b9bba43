import { randomBytes } from 'node:crypto';
import { describeLinkedDeviceStoreConformance } from '@roster/channels/testing';
import { InstallationKey } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import type { ChannelHost, ChannelLogger } from '@roster/contracts';
import {
  addTransactionCapability,
  Curve,
  generateSignalPubKey,
  getNextPreKeys,
  initAuthCreds,
  proto,
  type AuthenticationCreds,
  type SignalDataSet,
  type SignalDataTypeMap,
  type SignalKeyStore,
} from 'baileys';
import { makeLibSignalRepository } from 'baileys/lib/Signal/libsignal.js';
import type { ILogger } from 'baileys/lib/Utils/logger.js';
import { describe, expect, it } from 'vitest';
import { MemoryLinkedDevices } from './memory-linked-devices.js';
import { channelPlugin } from './plugin.js';
import { WhatsAppSession } from './session.js';

const quiet: ILogger = { level: 'silent', child: () => quiet, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
const transactions = { maxCommitRetries: 3, delayBetweenTriesMs: 10 };
const silent: ChannelLogger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
const me = { id: '4915550000000:12@s.whatsapp.net', lid: '190000000000001:12@lid', name: 'Roster' };

/** The sessions, kept as the host keeps them (its store in Postgres runs the same conformance suite as this one). */
const devices = new MemoryLinkedDevices();
const session = (account: string, key: InstallationKey = testInstallationKey) => new WhatsAppSession(devices.store(account), key);

describeLinkedDeviceStoreConformance('in memory (these tests\' stand-in)', (account) => devices.store(account));

/** Everything the session handed to its store, as text. */
function storedText(): string {
  return JSON.stringify([[...devices.sessions], [...devices.keys].map(([account, keys]) => [account, [...keys]])]);
}

/** A key store in memory, as the other party (a phone) keeps its own. */
function memoryKeys(): SignalKeyStore {
  const data = new Map<string, unknown>();
  return {
    async get<T extends keyof SignalDataTypeMap>(kind: T, ids: string[]) {
      const found: { [id: string]: SignalDataTypeMap[T] } = {};
      for (const id of ids) if (data.has(`${kind}/${id}`)) found[id] = data.get(`${kind}/${id}`) as SignalDataTypeMap[T];
      return found;
    },
    async set(values: SignalDataSet) {
      for (const [kind, entries] of Object.entries(values)) {
        for (const [id, value] of Object.entries(entries ?? {})) {
          if (value === null) data.delete(`${kind}/${id}`);
          else data.set(`${kind}/${id}`, value);
        }
      }
    },
  };
}

describe('the WhatsApp session, sealed in its store', () => {
  it('round-trips credentials and every kind of key through the store, and a null deletes', async () => {
    const store = session('round-trip');
    const first = await store.authState();
    expect(first.linked).toBe(false);
    // Nothing is stored before the device names an account.
    await first.saveCreds();
    expect(await store.read()).toBeNull();

    const creds = first.state.creds;
    Object.assign(creds, { me, platform: 'smba' } satisfies Partial<AuthenticationCreds>);
    await first.saveCreds();
    const preKey = Curve.generateKeyPair();
    const syncKey = proto.Message.AppStateSyncKeyData.fromObject({ keyData: randomBytes(32), fingerprint: { rawId: 7, currentIndex: 1, deviceIndexes: [0, 1] }, timestamp: 1_700_000_000 });
    await first.state.keys.set({
      'pre-key': { '1': preKey, '2': Curve.generateKeyPair() },
      session: { '4915551000001.0': randomBytes(64) },
      'app-state-sync-key': { AAAAAAAA: syncKey },
      'sender-key-memory': { '120363000000000001@g.us': { '4915551000001:0@s.whatsapp.net': true } },
      'lid-mapping': { '4915551000001': '100000000000001' },
    });

    const reopened = await session('round-trip').authState();
    expect(reopened.linked).toBe(true);
    expect(reopened.state.creds.me).toEqual(me);
    expect(reopened.state.creds.advSecretKey).toBe(creds.advSecretKey);
    expect(reopened.state.creds.registrationId).toBe(creds.registrationId);
    expect(Buffer.from(reopened.state.creds.noiseKey.private).equals(Buffer.from(creds.noiseKey.private))).toBe(true);
    expect(Buffer.from(reopened.state.creds.signedPreKey.signature).equals(Buffer.from(creds.signedPreKey.signature))).toBe(true);

    const keys = reopened.state.keys;
    const preKeys = await keys.get('pre-key', ['1', '2', '3']);
    expect(Object.keys(preKeys).sort()).toEqual(['1', '2']);
    expect(Buffer.from(preKeys['1']!.private).equals(Buffer.from(preKey.private))).toBe(true);
    const sync = (await keys.get('app-state-sync-key', ['AAAAAAAA']))['AAAAAAAA']!;
    // baileys reads an app-state key as its protobuf message, not as plain JSON.
    expect(sync).toBeInstanceOf(proto.Message.AppStateSyncKeyData);
    expect(Buffer.from(sync.keyData!).equals(Buffer.from(syncKey.keyData!))).toBe(true);
    expect(await keys.get('sender-key-memory', ['120363000000000001@g.us'])).toEqual({ '120363000000000001@g.us': { '4915551000001:0@s.whatsapp.net': true } });
    expect(await keys.get('lid-mapping', ['4915551000001'])).toEqual({ '4915551000001': '100000000000001' });

    await keys.set({ 'pre-key': { '1': null } });
    expect(Object.keys(await keys.get('pre-key', ['1', '2']))).toEqual(['2']);
    expect(await store.read()).toMatchObject({ status: 'linked', phone: '+4915550000000', qr: null });
  });

  it('carries a real Signal session across a restart: what baileys wrote decrypts and encrypts after reopening', async () => {
    const alice = session('signal');
    const opened = await alice.authState();
    Object.assign(opened.state.creds, { me });
    await opened.saveCreds();
    const aliceRepository = () =>
      alice.authState().then(({ state }) => makeLibSignalRepository({ creds: state.creds, keys: addTransactionCapability(state.keys, quiet, transactions) }, quiet));

    // The other party: a phone with its own keys, publishing a pre-key bundle.
    const bobCreds = initAuthCreds();
    const bobKeys = addTransactionCapability(memoryKeys(), quiet, transactions);
    const bob = makeLibSignalRepository({ creds: bobCreds, keys: bobKeys }, quiet);
    const { preKeys, update } = await getNextPreKeys({ creds: bobCreds, keys: bobKeys }, 1);
    Object.assign(bobCreds, update);
    const [preKeyId, preKey] = Object.entries(preKeys)[0]!;
    const bobJid = '4915551000002@s.whatsapp.net';
    const aliceJid = '4915550000000@s.whatsapp.net';

    const first = await aliceRepository();
    await first.injectE2ESession({
      jid: bobJid,
      session: {
        registrationId: bobCreds.registrationId,
        identityKey: generateSignalPubKey(bobCreds.signedIdentityKey.public),
        signedPreKey: { keyId: bobCreds.signedPreKey.keyId, publicKey: generateSignalPubKey(bobCreds.signedPreKey.keyPair.public), signature: bobCreds.signedPreKey.signature },
        preKey: { keyId: Number(preKeyId), publicKey: generateSignalPubKey(preKey.public) },
      },
    });
    const hello = await first.encryptMessage({ jid: bobJid, data: Buffer.from('hello before the restart') });
    expect(Buffer.from(await bob.decryptMessage({ jid: aliceJid, type: hello.type, ciphertext: hello.ciphertext })).toString()).toBe('hello before the restart');

    // A restart: a new store and repository over the same rows. Bob's answer opens with the session baileys stored.
    const second = await aliceRepository();
    const answer = await bob.encryptMessage({ jid: aliceJid, data: Buffer.from('hello back') });
    expect(Buffer.from(await second.decryptMessage({ jid: bobJid, type: answer.type, ciphertext: answer.ciphertext })).toString()).toBe('hello back');
    const after = await second.encryptMessage({ jid: bobJid, data: Buffer.from('hello after the restart') });
    expect(after.type).toBe('msg');
    expect(Buffer.from(await bob.decryptMessage({ jid: aliceJid, type: after.type, ciphertext: after.ciphertext })).toString()).toBe('hello after the restart');
  });

  it('hands its store nothing readable without the installation key, and a value opens only where it was sealed', async () => {
    const store = session('sealed');
    const { state, saveCreds } = await store.authState();
    Object.assign(state.creds, { me });
    await saveCreds();
    const preKey = Curve.generateKeyPair();
    await state.keys.set({ 'pre-key': { '9': preKey } });
    await store.showQr('2@should-not-happen');
    const qrStore = session('sealed-qr');
    expect(await qrStore.showQr('2@pairing-ref,noise,identity,adv-secret-value')).toBe(true);

    const stored = storedText();
    // Positive control: the session and its key are there, and they are the ones read below.
    expect(stored).toContain('"status":"linked"');
    expect(stored).toContain('pre-key/9');
    expect(devices.sessions.get('sealed')?.credentialsSealed).toEqual(expect.any(String));
    for (const secret of [
      state.creds.advSecretKey,
      Buffer.from(state.creds.noiseKey.private).toString('base64'),
      Buffer.from(state.creds.noiseKey.private).toString('hex'),
      Buffer.from(state.creds.signedIdentityKey.private).toString('base64'),
      Buffer.from(preKey.private).toString('base64'),
      Buffer.from(preKey.private).toString('hex'),
      'adv-secret-value',
      'pairing-ref',
    ]) {
      expect(stored).not.toContain(secret);
    }
    // A linked account shows no QR code: the one offered after linking was refused.
    expect((await store.read())!.qr).toBeNull();
    expect((await qrStore.read())!.qr).toBe('2@pairing-ref,noise,identity,adv-secret-value');

    // Another installation's key opens nothing.
    const otherKey = new InstallationKey(randomBytes(32), 'other');
    await expect(session('sealed', otherKey).authState()).rejects.toMatchObject({ code: 'secret_unreadable' });
    await expect(session('sealed-qr', otherKey).read()).rejects.toMatchObject({ code: 'secret_unreadable' });

    // A session copied to another account does not open there (the account is sealed in).
    devices.sessions.set('copied', { ...devices.sessions.get('sealed')! });
    devices.keys.set('copied', new Map(devices.keys.get('sealed')));
    // …and a key copied to another id of the same account does not open either.
    devices.keys.get('sealed')!.set('pre-key/10', devices.keys.get('sealed')!.get('pre-key/9')!);
    await expect(session('copied').authState()).rejects.toMatchObject({ code: 'secret_unreadable' });
    const { state: same } = await store.authState();
    expect(Object.keys(await same.keys.get('pre-key', ['9']))).toEqual(['9']);
    await expect(same.keys.get('pre-key', ['10'])).rejects.toMatchObject({ code: 'secret_unreadable' });
  });

  it('records a logout: keys and credentials go, the number stays; doctor reads the state without the key', async () => {
    const store = session('gone');
    const { state, saveCreds } = await store.authState();
    Object.assign(state.creds, { me });
    await saveCreds();
    await state.keys.set({ 'pre-key': { '1': Curve.generateKeyPair() } });
    // The doctor's check: the host's store and no installation key, so nothing sealed can be opened.
    const asked: string[] = [];
    const host: ChannelHost = {
      logger: silent,
      derive: () => {
        throw new Error('no installation key here');
      },
      services: {},
      linkedDevice: (channel, account) => {
        asked.push(`${channel}/${account}`);
        return devices.store(account);
      },
    };
    const check = (account: string) => channelPlugin.check({ account }, host, {});
    expect(await check('gone')).toEqual({ status: 'ok', detail: 'linked as +4915550000000' });
    expect(asked).toEqual(['whatsapp/gone']);

    await store.loggedOut();
    expect(await check('gone')).toEqual({ status: 'fail', detail: 'logged out (was +4915550000000): the phone removed this device; re-link with roster channel add whatsapp' });
    expect(await store.linked()).toBe(false);
    expect({ keys: devices.keys.get('gone')?.size, credentials: devices.sessions.get('gone')?.credentialsSealed }).toEqual({ keys: 0, credentials: null });
    // A new pairing starts from fresh credentials.
    const fresh = await store.authState();
    expect(fresh.linked).toBe(false);
    expect(fresh.state.creds.advSecretKey).not.toBe(state.creds.advSecretKey);
    expect((await check('never')).detail).toMatch(/^not linked yet: run roster channel add whatsapp/);
  });
});
