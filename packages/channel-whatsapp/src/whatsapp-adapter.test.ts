import { randomBytes } from 'node:crypto';
import { serveChannel, type ServedChannel } from '@roster/channel-host';
import { until } from '@roster/channels/testing';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { maxFileBytes } from '@roster/core';
import { createApprovalDesk, listLessons } from '@roster/learning';
import { createRuntime, type Runtime } from '@roster/runtime';
import type { ChannelAdapter, ChannelEvent, LinkedDeviceStore } from '@roster/contracts';
import { makeWASocket, proto, type WAMessage } from 'baileys';
import { WebSocketServer } from 'ws';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fakeBot, linkThrough, startFakeWhatsApp, type FakeWhatsApp, type MediaFields } from './fake-whatsapp.js';
import { linkWhatsApp } from './link.js';
import { MemoryLinkedDevices } from './memory-linked-devices.js';
import { WhatsAppSession } from './session.js';

let test: TestDatabase;
let roster: Runtime;
/** WhatsApp's sessions, kept as the host keeps them (here in memory); the core's database is `test`. */
const sessions = new MemoryLinkedDevices();
const stops: Array<() => Promise<unknown>> = [];
let accounts = 0;

beforeAll(async () => {
  test = await openTestDatabase();
  roster = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
  await roster.core.directory.addAgent({ name: 'Scout', job: 'finds and checks sources' });
});
afterAll(async () => {
  await test?.cleanup();
});
afterEach(async () => {
  while (stops.length > 0) await stops.pop()!();
});

/** A far side and an account of its own for one test: the account's store, and its session read through it. */
async function fresh(): Promise<{ fake: FakeWhatsApp; account: string; devices: LinkedDeviceStore; store: WhatsAppSession }> {
  const account = `wa${++accounts}`;
  const devices = sessions.store(account);
  const fake = await startFakeWhatsApp({ store: devices, key: testInstallationKey, qrMs: 60_000 });
  stops.push(() => fake.close());
  return { fake, account, devices, store: new WhatsAppSession(devices, testInstallationKey) };
}

async function started(adapter: ChannelAdapter): Promise<ChannelEvent[]> {
  const events: ChannelEvent[] = [];
  await adapter.start({ signal: new AbortController().signal, onMessage: (event) => void events.push(event), onApprovalPress: async () => ({ text: 'no', decided: false }) });
  stops.push(() => adapter.stop());
  return events;
}

describe('linking WhatsApp by QR code', () => {
  it('shows the QR code in the store while it waits, links when a phone scans it, and resumes after a restart without a new code', async () => {
    const { fake, account, store } = await fresh();
    const adapter = fake.makeAdapter();
    await started(adapter);
    // Waiting for a scan: the current code is stored (sealed) for the page.
    await until(async () => (await store.read())?.status === 'waiting_for_scan', 'the QR code to be stored');
    const waiting = await store.read();
    expect(waiting).toMatchObject({ account, status: 'waiting_for_scan', phone: null });
    expect(waiting!.qr).toBe(fake.currentQr());
    expect(waiting!.qr).toMatch(/^https:\/\/wa\.me\/settings\/linked_devices#2@/);

    fake.scan();
    // WhatsApp pairs, asks for a restart, and the device connects with the new credentials.
    await until(async () => fake.sockets.length === 2 && fake.sockets[1]!.user !== undefined && (await store.read())?.status === 'linked', 'the link');
    expect(await store.read()).toMatchObject({ status: 'linked', phone: `+${fakeBot.number}`, qr: null });
    expect(fake.sockets[1]!.user?.id).toBe(`${fakeBot.number}:12@s.whatsapp.net`);
    await adapter.stop();

    // A restart: the stored session connects at once, no QR code.
    const again = fake.makeAdapter();
    await started(again);
    await until(() => fake.sockets.length === 3 && fake.sockets[2]!.user !== undefined, 'the resumed connection');
    expect(fake.currentQr()).toBeNull();
    expect(fake.sockets[2]!.config.auth!.creds.me?.id).toBe(`${fakeBot.number}:12@s.whatsapp.net`);
    expect((await store.read())!.status).toBe('linked');
  });

  it('links from the terminal (roster channel add whatsapp): each code is handed over until one is scanned; a linked account is left alone', async () => {
    const { fake, devices } = await fresh();
    const shown: string[] = [];
    const linking = linkWhatsApp({
      store: devices,
      key: testInstallationKey,
      socketFactory: fake.socketFactory,
      onQr: (qr) => void shown.push(qr),
    });
    await until(() => shown.length === 1, 'the first QR code');
    fake.scan();
    expect(await linking).toEqual({ phone: `+${fakeBot.number}`, already: false });
    expect(shown[0]).toMatch(/^https:\/\/wa\.me\/settings\/linked_devices#/);
    // It let go of the connection once linked.
    expect(fake.sockets.every((socket) => socket.closed)).toBe(true);
    const made = fake.sockets.length;
    expect(await linkWhatsApp({ store: devices, key: testInstallationKey, socketFactory: fake.socketFactory, onQr: () => undefined })).toEqual({ phone: `+${fakeBot.number}`, already: true });
    expect(fake.sockets.length).toBe(made);
  });

  it('says so when no phone scans any code in time, and shows no stale code', async () => {
    const devices = sessions.store(`wa${++accounts}`);
    const fake = await startFakeWhatsApp({ store: devices, key: testInstallationKey, qrCodes: 2, qrMs: 50 });
    stops.push(() => fake.close());
    const shown: string[] = [];
    await expect(linkWhatsApp({ store: devices, key: testInstallationKey, socketFactory: fake.socketFactory, onQr: (qr) => void shown.push(qr) })).rejects.toMatchObject({
      code: 'whatsapp_link_expired',
    });
    expect(shown).toHaveLength(2);
    expect(await new WhatsAppSession(devices, testInstallationKey).read()).toMatchObject({ status: 'waiting_for_scan', qr: null });
  });
});

describe('the WhatsApp connection', () => {
  it('reconnects after a drop, trying again while it fails, and records a logout, after which it tries nothing until linked again', async () => {
    const { fake, devices, store } = await fresh();
    await linkThrough(fake, { store: devices, key: testInstallationKey });
    const adapter = fake.makeAdapter();
    await started(adapter);
    const opened = () => fake.sockets.filter((socket) => socket.user !== undefined && !socket.closed).length === 1;
    await until(opened, 'the connection');
    const before = fake.sockets.length;

    // Lost, and the tries fail for a while: each failure is tried again, and the state says so.
    fake.failConnects(Number.POSITIVE_INFINITY);
    fake.drop();
    await until(() => fake.sockets.length >= before + 3, 'two failed tries', 15_000);
    await until(async () => (await store.read())?.status === 'reconnecting', 'the reconnecting state');
    // WhatsApp answers again: the next try opens the link.
    fake.failConnects(0);
    await until(() => opened(), 'the connection to come back', 15_000);
    await until(async () => (await store.read())?.status === 'linked', 'the linked state again');

    // The phone removes the device: recorded, the session deleted, and no more tries.
    fake.logOut();
    await until(async () => (await store.read())?.status === 'logged_out', 'the logout to be recorded');
    const afterLogout = fake.sockets.length;
    // Positive control above (a drop was tried again within 50–400 ms); here, many such waits pass with no try.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(fake.sockets.length).toBe(afterLogout);
    expect(await store.read()).toMatchObject({ status: 'logged_out', phone: `+${fakeBot.number}` });
    expect(await store.linked()).toBe(false);

    // Linked again from the terminal: the running adapter takes the new link up.
    await linkThrough(fake, { store: devices, key: testInstallationKey });
    await until(() => opened(), 'the adapter to connect with the new link');
    expect((await store.read())!.status).toBe('linked');
  });

  it('runs baileys’ own socket over the stored session: it opens the noise handshake with the far side, and when the server hangs up it is tried again', async () => {
    const { fake, devices, store } = await fresh();
    await linkThrough(fake, { store: devices, key: testInstallationKey });
    // The far side: a local WebSocket server that takes the client's hello and hangs up, as WhatsApp's does on a refused handshake.
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((resolve) => server.once('listening', resolve));
    stops.push(() => new Promise((resolve) => server.close(resolve)));
    const hellos: Buffer[] = [];
    server.on('connection', (socket) => {
      socket.once('message', (data: Buffer) => {
        hellos.push(data);
        socket.close();
      });
    });
    const url = `ws://127.0.0.1:${(server.address() as { port: number }).port}/ws/chat`;
    const adapter = fake.makeAdapter({ socketFactory: (config) => makeWASocket({ ...config, waWebSocketUrl: url, connectTimeoutMs: 5000 }) });
    await started(adapter);
    await until(() => hellos.length >= 3, 'three tries', 20_000);
    // Each try began WhatsApp's noise handshake: its "WA" prologue, then a ClientHello.
    for (const hello of hellos) expect(hello.subarray(0, 2).toString('latin1')).toBe('WA');
    expect((await store.read())!.status).toBe('reconnecting');
    // A linked session is never asked to pair again: no QR code was stored.
    expect((await store.read())!.qr).toBeNull();
  });

  it('holds a send while the connection is down, and sends once it is back', async () => {
    const { fake, devices } = await fresh();
    await linkThrough(fake, { store: devices, key: testInstallationKey });
    const adapter = fake.makeAdapter({ backoffMs: 300 });
    await started(adapter);
    await until(() => fake.sockets.some((socket) => socket.user !== undefined && !socket.closed), 'the connection');
    fake.drop();
    const user = fake.user(1);
    const sent = await adapter.sendText({ chatId: user.id }, 'are you there?');
    expect(fake.sent()).toEqual([expect.objectContaining({ id: sent.id, chatId: fake.dmChatId(user), text: 'are you there?' })]);
  });
});

describe('WhatsApp messages', () => {
  let fake: FakeWhatsApp;
  let adapter: ChannelAdapter;
  let events: ChannelEvent[];

  async function linkedAdapter(): Promise<void> {
    const made = await fresh();
    fake = made.fake;
    await linkThrough(fake, { store: made.devices, key: testInstallationKey });
    adapter = fake.makeAdapter();
    events = await started(adapter);
    await until(() => fake.sockets.some((socket) => socket.user !== undefined && !socket.closed), 'the connection');
  }

  it('takes a one-to-one message addressed by LID as the same person and chat as by number, and skips what is not a message for Roster', async () => {
    await linkedAdapter();
    const user = fake.user(7);
    await fake.deliver({ chat: 'dm', from: user, text: 'by number' });
    const lid = `${BigInt(user.id.slice(1)) + 100_000_000_000_000n}@lid`;
    const byLid = proto.WebMessageInfo.fromObject({ key: { remoteJid: lid, fromMe: false, id: '3EB0LID00000001' }, message: { conversation: 'by LID' }, messageTimestamp: 1_700_000_000, pushName: user.name }) as WAMessage;
    Object.assign(byLid.key, { remoteJidAlt: fake.dmChatId(user), addressingMode: 'lid' });
    fake.push(byLid);
    // Not for Roster: the account's own message (sent from the phone), a status, a reaction.
    const own = proto.WebMessageInfo.fromObject({ key: { remoteJid: fake.dmChatId(user), fromMe: true, id: '3EB0OWN00000001' }, message: { conversation: 'sent from the phone' } }) as WAMessage;
    const status = proto.WebMessageInfo.fromObject({ key: { remoteJid: 'status@broadcast', fromMe: false, id: '3EB0STATUS00001', participant: fake.dmChatId(user) }, message: { conversation: 'my status' } }) as WAMessage;
    const reaction = proto.WebMessageInfo.fromObject({ key: { remoteJid: fake.dmChatId(user), fromMe: false, id: '3EB0REACT000001' }, message: { reactionMessage: { text: '👍', key: { id: '3EB0OWN00000001' } } } }) as WAMessage;
    for (const message of [own, status, reaction]) fake.push(message);
    await until(() => events.length === 2, 'both messages');
    await new Promise((resolve) => setImmediate(resolve));
    expect(events.map((event) => event.inbound.text)).toEqual(['by number', 'by LID']);
    expect(new Set(events.map((event) => event.inbound.sender.externalId))).toEqual(new Set([user.id]));
    expect(new Set(events.map((event) => event.inbound.conversation.externalId))).toEqual(new Set([`${adapter.account}:${fake.dmChatId(user)}`]));
    // The answer goes back where the message came from.
    expect(events[1]!.target).toEqual({ chatId: lid, recipient: user.id });
  });

  it('marks what it answers read, shows typing and then stops it, and leaves a refused stranger’s message unread', async () => {
    await linkedAdapter();
    const person = await roster.core.directory.addPerson({ name: `Reader${accounts}` });
    const user = fake.user(20);
    await roster.core.directory.linkIdentity(person.id, 'whatsapp', user.id, user.name);
    await roster.core.directory.bindChannel({ channel: 'whatsapp', account: adapter.account, agent: 'Scout', policy: 'allowlist', allowlist: [] });
    await adapter.stop();
    stops.pop();
    const served: ServedChannel = await serveChannel({ adapter, core: roster.core });
    stops.push(() => served.stop());
    await until(() => fake.sockets.some((socket) => socket.user !== undefined && !socket.closed), 'the connection');

    const first = await fake.deliver({ chat: 'dm', from: user, text: 'remember that my desk is on floor 3' });
    await served.settled();
    expect(fake.reads().map((key) => key.id)).toEqual([first.messageId]);
    // Known now: the next answer shows typing, and "paused" goes out before the answer.
    const second = await fake.deliver({ chat: 'dm', from: user, text: 'what do you know about my desk?' });
    await served.settled();
    expect(fake.reads().map((key) => key.id)).toEqual([first.messageId, second.messageId]);
    const presence = fake.presences().filter((update) => update.jid === fake.dmChatId(user)).map((update) => update.type);
    expect(presence[0]).toBe('composing');
    expect(presence.at(-1)).toBe('paused');
    expect(fake.sent().filter((message) => message.chatId === fake.dmChatId(user)).map((message) => message.text)).toEqual([
      'Noted: your desk is on floor 3',
      expect.stringContaining('your desk is on floor 3'),
    ]);

    // In a group, what is said to others is not marked read when the bot answers the message addressed to it.
    const chatter = await fake.deliver({ chat: 'group', from: user, text: 'lunch at noon, everyone?' });
    const mention = await fake.deliver({ chat: 'group', from: user, text: 'what do you know about my desk?', mentionBot: true });
    await served.settled();
    expect(fake.sent().filter((message) => message.chatId === fake.groupChatId)).toHaveLength(1);
    expect(fake.reads().map((key) => key.id)).toContain(mention.messageId);
    expect(fake.reads().map((key) => key.id)).not.toContain(chatter.messageId);

    // Under the allowlist a stranger is answered nothing, and their message is not marked read.
    const stranger = await fake.deliver({ chat: 'dm', from: fake.user(21), text: 'hello?' });
    await served.settled();
    expect(fake.reads().map((key) => key.id)).not.toContain(stranger.messageId);
    expect(fake.sent().filter((message) => message.chatId === fake.dmChatId(fake.user(21)))).toEqual([]);
  });

  it('takes an approval decided by replying "approve" to its message, and answers anything else as a message', async () => {
    await linkedAdapter();
    const directory = roster.core.directory;
    const owner = await directory.addPerson({ name: `Owner${accounts}`, role: 'owner' });
    const user = fake.user(30);
    await directory.linkIdentity(owner.id, 'whatsapp', user.id, user.name);
    await directory.bindChannel({ channel: 'whatsapp', account: adapter.account, agent: 'Scout', policy: 'pairing' });
    const scout = (await directory.listAgents()).find((agent) => agent.name === 'Scout')!;
    const text = 'Cite two sources for every claim about a person.';
    const [approval] = await test.database.adminScope('test: propose a lesson', async (tx) =>
      (await tx.query<{ id: string }>(`insert into approvals (agent_id, text, proposed_by_kind, proposed_by) values ($1, $2, 'agent', 'Scout') returning id`, [scout.id, text])).rows,
    );
    await adapter.stop();
    stops.pop();
    const served = await serveChannel({ adapter, core: roster.core, approvals: createApprovalDesk(test.database, roster.memory.audit, directory), approvalPollMs: 60_000 });
    stops.push(() => served.stop());
    await until(() => fake.sent().some((message) => message.buttons.length > 0), 'the approval');
    const asked = fake.sent().find((message) => message.buttons.length > 0)!;
    expect(asked.text).toContain(text);
    expect(asked.text).toContain(`(approval ${approval!.id})`);

    // "approve ZZZZZZ" names no approval sent here: it is a message like any other.
    await fake.deliver({ chat: 'dm', from: user, text: 'approve FFFFFF' });
    await served.settled();
    expect(await listLessons(test.database, scout.id)).toEqual([]);

    // A swipe-reply to the approval's message with the one word decides it.
    await fake.deliver({ chat: 'dm', from: user, text: 'Approve', replyTo: { id: asked.id, fromBot: true } });
    await until(async () => (await listLessons(test.database, scout.id)).length === 1, 'the lesson');
    await until(() => fake.sent().some((message) => message.text.startsWith('Approved by')), 'the answer');
    expect((await listLessons(test.database, scout.id)).map((lesson) => lesson.text)).toEqual([text]);
  });

  it('sends an approval whose text fills a whole message as the text, then the question', async () => {
    await linkedAdapter();
    const text = 'x'.repeat(4090);
    const sent = await adapter.sendApproval({ chatId: fake.user(40).id }, { id: '7c9e6679-7425-40de-944b-e07fc1f90ae7', text });
    const messages = fake.sent();
    expect(messages.map((message) => message.text)).toEqual([text, 'Reply "approve 7C9E66" or "reject 7C9E66" (approval 7c9e6679-7425-40de-944b-e07fc1f90ae7).']);
    expect(sent.id).toBe(messages[1]!.id);
    expect(messages.every((message) => message.text.length <= adapter.capabilities.textLimit)).toBe(true);
  });
});

describe('WhatsApp media', () => {
  let fake: FakeWhatsApp;
  let events: ChannelEvent[];
  const signal = new AbortController().signal;

  beforeEach(async () => {
    const made = await fresh();
    fake = made.fake;
    await linkThrough(fake, { store: made.devices, key: testInstallationKey });
    events = await started(fake.makeAdapter());
    await until(() => fake.sockets.some((socket) => socket.user !== undefined && !socket.closed), 'the connection');
  });

  /** Deliver each content and return the events the adapter made of them, in order. */
  async function received(contents: proto.IMessage[]): Promise<ChannelEvent[]> {
    const before = events.length;
    for (const content of contents) await fake.deliverContent(fake.user(50), content);
    await until(() => events.length === before + contents.length, `${contents.length} messages`);
    return events.slice(before);
  }

  const pathOf = (media: MediaFields) => new URL(media.directPath, 'http://x').pathname;

  it('hands an image, a voice note and a document over as files, fetched from the media server and opened with the message’s key; a video is named, not fetched', async () => {
    const photo = randomBytes(5000);
    const voice = randomBytes(7001);
    const pdf = randomBytes(3003);
    const image = await fake.upload(photo, 'image');
    const audio = await fake.upload(voice, 'audio');
    const document = await fake.upload(pdf, 'document');
    const video = await fake.upload(randomBytes(900), 'video');
    const [withPhoto, withVoice, withDocument, withVideo] = await received([
      { imageMessage: { ...image, mimetype: 'image/jpeg', caption: 'what is on this label?' } },
      { audioMessage: { ...audio, mimetype: 'audio/ogg; codecs=opus', ptt: true, seconds: 4 } },
      { documentWithCaptionMessage: { message: { documentMessage: { ...document, mimetype: 'application/pdf', fileName: 'invoice.pdf', caption: 'the invoice' } } } },
      { videoMessage: { ...video, mimetype: 'video/mp4', caption: 'a clip' } },
    ]);
    // Nothing is fetched until the files are asked for (past the group filter and the rate limit).
    expect(fake.downloads()).toEqual([]);

    expect(withPhoto!).toMatchObject({ media: ['image'], inbound: { text: 'what is on this label?' } });
    expect(await withPhoto!.fetchFiles!(signal)).toEqual({ files: [{ kind: 'image', mediaType: 'image/jpeg', data: new Uint8Array(photo) }], skipped: [] });
    // A voice note: Opus in Ogg, its codec parameter left out of the media type.
    expect(withVoice!).toMatchObject({ media: ['voice'], inbound: { text: '' } });
    expect(await withVoice!.fetchFiles!(signal)).toEqual({ files: [{ kind: 'audio', mediaType: 'audio/ogg', data: new Uint8Array(voice) }], skipped: [] });
    expect(withDocument!).toMatchObject({ media: ['file'], inbound: { text: 'the invoice' } });
    expect(await withDocument!.fetchFiles!(signal)).toEqual({ files: [{ kind: 'file', mediaType: 'application/pdf', data: new Uint8Array(pdf), name: 'invoice.pdf' }], skipped: [] });
    expect(withVideo!).toMatchObject({ media: ['video'], inbound: { text: 'a clip' } });
    expect(withVideo!.fetchFiles).toBeUndefined();
    // What went over the wire was the encrypted copy, one download each.
    expect(fake.downloads()).toEqual([pathOf(image), pathOf(audio), pathOf(document)]);
  });

  it('refuses a file announced over the limit before fetching it, stops one that grows past it, and says plainly when one is gone or does not open', async () => {
    const [small, other, tampered, gone, control] = await Promise.all([1, 2, 3, 4, 5].map((n) => fake.upload(randomBytes(1000 + n), 'image')));
    const large = await fake.upload(new Uint8Array(maxFileBytes + 64 * 1024), 'image');
    fake.expire(gone!.directPath);
    const picture = (media: proto.Message.IImageMessage): proto.IMessage => ({ imageMessage: { ...media, mimetype: 'image/jpeg' } });
    const [announced, grows, wrongKey, wrongHash, expired, elsewhere, offWhatsApp, fine] = await received([
      picture({ ...small!, fileLength: maxFileBytes + 1 }),
      // Announced small, sent large: stopped once the bytes pass the limit.
      picture({ ...large, fileLength: 2048 }),
      picture({ ...other!, mediaKey: small!.mediaKey }),
      picture({ ...tampered!, fileSha256: randomBytes(32) }),
      picture(gone!),
      // A path that leaves WhatsApp's media server, and an address on another host: neither is fetched.
      picture({ ...control!, directPath: '//attacker.example/v/t62.7118-24/1_n.enc', url: 'https://attacker.example/v/t62.7118-24/1_n.enc' }),
      picture({ ...control!, directPath: null, url: `${fake.mediaOrigin}${control!.directPath}` }),
      picture(control!),
    ]);
    const tooLarge = 'That image is too large: the most Roster takes is 10 MB. Nothing was kept; send a smaller one.';
    const unopened = "That image could not be opened: WhatsApp's copy of it does not match the message. Nothing was kept; send it again.";

    await expect(announced!.fetchFiles!(signal)).rejects.toThrow(tooLarge);
    expect(fake.downloads()).toEqual([]);
    await expect(grows!.fetchFiles!(signal)).rejects.toThrow(tooLarge);
    expect(fake.downloads()).toEqual([pathOf(large)]);
    await expect(wrongKey!.fetchFiles!(signal)).rejects.toThrow(unopened);
    await expect(wrongHash!.fetchFiles!(signal)).rejects.toThrow(unopened);
    await expect(expired!.fetchFiles!(signal)).rejects.toThrow("WhatsApp no longer has that image (its copy expired on WhatsApp's servers); send it again.");
    const fetched = fake.downloads().length;
    await expect(elsewhere!.fetchFiles!(signal)).rejects.toThrow(unopened);
    await expect(offWhatsApp!.fetchFiles!(signal)).rejects.toThrow(unopened);
    expect(fake.downloads()).toHaveLength(fetched);
    // The control: the same file, as its message names it, opens.
    const { files } = await fine!.fetchFiles!(signal);
    expect(files.map((file) => file.data.byteLength)).toEqual([1005]);
    expect(fake.downloads()).toHaveLength(fetched + 1);
  });
});
