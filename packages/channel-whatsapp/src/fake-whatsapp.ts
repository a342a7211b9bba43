/**
 * The far side of WhatsApp, for tests: a socket factory whose sockets carry
 * baileys' own event emitter (`makeEventBuffer`) and speak through it as
 * baileys does after talking to WhatsApp's servers — `connection.update`
 * (connecting, a QR code, open, close with WhatsApp's disconnect codes),
 * `creds.update` when a phone scans the code, `messages.upsert` with real
 * `proto.WebMessageInfo` messages (one-to-one chats addressed by number,
 * groups by LID, as WhatsApp sends them now) — and records what the adapter
 * sends, marks read and shows typing in. Refusals come back as baileys
 * throws WhatsApp's error nodes: a Boom with the node's code.
 *
 * Media is WhatsApp's: a photo, a voice note or a document is encrypted
 * with baileys' own `encryptedStream` (a fresh media key, AES-CBC, its
 * hashes), served by a local HTTP server as WhatsApp's media servers serve
 * it (`directPath`), and the message carries the key, the hashes and the
 * length, so the adapter runs baileys' real download and decryption.
 *
 * What is not baileys here: the noise handshake, the binary protocol and
 * Signal encryption to and from WhatsApp's servers. Test-only: excluded
 * from the build.
 */
import { randomBytes } from 'node:crypto';
import { Boom } from '@hapi/boom';
import { fakePicture, type Delivered, type PlatformMessage, type PlatformUser, type SendAttempt, type SentRecord } from '@roster/channels/testing';
import type { InstallationKey } from '@roster/config';
import type { LinkedDeviceStore } from '@roster/contracts';
import {
  buildPairingQRData,
  DisconnectReason,
  makeEventBuffer,
  proto,
  type AnyMessageContent,
  type AuthenticationCreds,
  type Contact,
  type MiscMessageGenerationOptions,
  type WAMessage,
  type WAMessageKey,
  type WAPresence,
} from 'baileys';
import type { WhatsAppSocketFactory } from './connection.js';
import { startFakeMediaServer } from './fake-media-server.js';
import type { FakeSocket, FakeWhatsApp, FakeWhatsAppOptions } from './fake-whatsapp-types.js';
import { linkWhatsApp } from './link.js';
import { createWhatsAppAdapter } from './whatsapp-adapter.js';

export type { MediaFields } from './fake-media-server.js';
export type { FakeSocket, FakeWhatsApp, FakeWhatsAppOptions } from './fake-whatsapp-types.js';

/** The bot's account: its number and its LID. */
export const fakeBot = { number: '4915550000000', lid: '190000000000001', name: 'Roster' };
const groupJid = '120363000000000001@g.us';

export async function startFakeWhatsApp(options: FakeWhatsAppOptions): Promise<FakeWhatsApp> {
  const sockets: FakeSocket[] = [];
  const media = await startFakeMediaServer();
  const { upload } = media;
  const mediaOrigin = media.origin;
  const sent: SentRecord[] = [];
  const attempts: SendAttempt[] = [];
  const typing: string[] = [];
  const presences: Array<{ type: WAPresence; jid: string }> = [];
  const reads: WAMessageKey[] = [];
  const pressAnswers: string[] = [];
  const pressIds = new Set<string>();
  const blocked = new Set<string>();
  const delivered = new Map<string, WAMessage>();
  let rateLimitNext = false;
  let failing = 0;
  let current: FakeSocketControl | undefined;

  interface FakeSocketControl {
    socket: FakeSocket;
    qr: string | null;
    emitClose(error: Error | undefined): void;
    pair(): void;
  }

  const socketFactory: WhatsAppSocketFactory = (config) => {
    const creds = config.auth!.creds as AuthenticationCreds;
    const ev = makeEventBuffer(config.logger!);
    let closed = false;
    let user: Contact | undefined;
    let qrTimer: NodeJS.Timeout | undefined;
    const control: FakeSocketControl = {
      socket: undefined as unknown as FakeSocket,
      qr: null,
      emitClose(error) {
        if (closed) return;
        closed = true;
        if (qrTimer !== undefined) clearTimeout(qrTimer);
        control.qr = null;
        user = undefined;
        ev.emit('connection.update', { connection: 'close', lastDisconnect: { error, date: new Date() } });
      },
      pair() {
        // What pair-success brings (baileys' configureSuccessfulPairing): the account, merged into the creds.
        const update: Partial<AuthenticationCreds> = { me: { id: `${fakeBot.number}:12@s.whatsapp.net`, lid: `${fakeBot.lid}:12@lid`, name: fakeBot.name }, platform: 'smba' };
        Object.assign(creds, update);
        ev.emit('creds.update', update);
        // …then WhatsApp asks the new device to restart its connection.
        control.emitClose(new Boom('Restart Required', { statusCode: DisconnectReason.restartRequired }));
      },
    };
    const socket: FakeSocket = {
      config,
      ev,
      get user() {
        return user;
      },
      get closed() {
        return closed;
      },
      async sendMessage(jid: string, content: AnyMessageContent, messageOptions?: MiscMessageGenerationOptions) {
        if (closed) throw new Boom('Connection Closed', { statusCode: DisconnectReason.connectionClosed });
        if (rateLimitNext) {
          rateLimitNext = false;
          attempts.push({ chatId: jid, at: Date.now(), outcome: 'rate-limited' });
          // assertNodeErrorFree: <error code="429" text="rate-overlimit"/> thrown as a Boom with the code as data.
          throw new Boom('rate-overlimit', { data: 429 });
        }
        if (blocked.has(jid)) {
          attempts.push({ chatId: jid, at: Date.now(), outcome: 'blocked' });
          throw new Boom('forbidden', { data: 403 });
        }
        const text = 'text' in content && typeof content.text === 'string' ? content.text : '';
        if ('edit' in content && content.edit !== undefined) {
          const record = sent.find((message) => message.id === content.edit!.id && message.chatId === jid);
          if (record === undefined) throw new Boom('item-not-found', { data: 404 });
          record.text = text;
          return undefined;
        }
        if (text.length > 65_536) throw new Boom('not-acceptable', { data: 406 });
        const id = messageId();
        const quoted = messageOptions?.quoted?.key?.id;
        if (quoted !== undefined && quoted !== null && pressIds.has(quoted)) pressAnswers.push(text);
        sent.push({ id, chatId: jid, text, buttons: approvalButtons(text), at: Date.now() });
        attempts.push({ chatId: jid, at: Date.now(), outcome: 'sent' });
        return proto.WebMessageInfo.fromObject({
          key: { remoteJid: jid, fromMe: true, id },
          message: { conversation: text },
          messageTimestamp: Math.floor(Date.now() / 1000),
          status: proto.WebMessageInfo.Status.PENDING,
        }) as WAMessage;
      },
      async readMessages(keys: WAMessageKey[]) {
        if (closed) throw new Boom('Connection Closed', { statusCode: DisconnectReason.connectionClosed });
        reads.push(...keys);
      },
      async sendPresenceUpdate(type: WAPresence, jid?: string) {
        if (closed) throw new Boom('Connection Closed', { statusCode: DisconnectReason.connectionClosed });
        if (jid === undefined || blocked.has(jid)) return;
        presences.push({ type, jid });
        if (type === 'composing') typing.push(jid);
      },
      end(error: Error | undefined) {
        control.emitClose(error);
      },
    };
    control.socket = socket;
    sockets.push(socket);
    current = control;

    setImmediate(() => {
      if (closed) return;
      ev.emit('connection.update', { connection: 'connecting' });
      if (failing > 0) {
        failing -= 1;
        control.emitClose(new Boom('Connection Terminated', { statusCode: DisconnectReason.connectionClosed }));
        return;
      }
      if (creds.me !== undefined) {
        user = creds.me;
        ev.emit('connection.update', { connection: 'open', receivedPendingNotifications: true });
        return;
      }
      let left = options.qrCodes ?? 6;
      const showQr = () => {
        if (closed) return;
        if (left === 0) return control.emitClose(new Boom('QR refs attempts ended', { statusCode: DisconnectReason.timedOut }));
        left -= 1;
        const ref = `2@${randomBytes(18).toString('base64')}`;
        control.qr = buildPairingQRData(
          ref,
          Buffer.from(creds.noiseKey.public).toString('base64'),
          Buffer.from(creds.signedIdentityKey.public).toString('base64'),
          creds.advSecretKey,
          config.browser!,
        );
        ev.emit('connection.update', { qr: control.qr });
        qrTimer = setTimeout(showQr, options.qrMs ?? 20_000);
        qrTimer.unref();
      };
      showQr();
    });
    return socket;
  };

  const user = (n: number): PlatformUser => ({ id: `+4915551${String(n).padStart(6, '0')}`, name: `Wanda ${n}` });
  const numberOf = (person: PlatformUser) => person.id.slice(1);
  const pnJid = (person: PlatformUser) => `${numberOf(person)}@s.whatsapp.net`;
  const lidJid = (person: PlatformUser) => `${BigInt(numberOf(person)) + 100_000_000_000_000n}@lid`;
  const botLid = `${fakeBot.lid}@lid`;

  function push(message: WAMessage): void {
    if (current === undefined || current.socket.closed) throw new Error('no open WhatsApp connection to deliver to');
    delivered.set(message.key.id!, message);
    current.socket.ev.emit('messages.upsert', { messages: [message], type: 'notify' });
  }

  async function build(message: PlatformMessage & { text: string }): Promise<WAMessage> {
    const id = messageId();
    let text = message.text;
    const context: proto.IContextInfo = {};
    if (message.mentionBot === true) {
      // A group addressed by LID mentions by LID: "@<lid>" in the text, the jid in mentionedJid.
      text = `@${fakeBot.lid} ${text}`;
      context.mentionedJid = [botLid];
    }
    if (message.replyTo !== undefined) {
      context.stanzaId = message.replyTo.id;
      context.participant = message.replyTo.fromBot ? botLid : lidJid(message.from);
      context.quotedMessage = { conversation: 'an earlier message' };
    }
    const hasContext = Object.keys(context).length > 0;
    const inContext = hasContext ? { contextInfo: context } : {};
    const caption = text === '' ? {} : { caption: text };
    const attachment = message.attachment ?? (message.image === true ? { kind: 'image' as const, data: fakePicture, mediaType: 'image/png' } : undefined);
    let content: proto.IMessage;
    if (attachment?.kind === 'image') content = { imageMessage: { ...(await upload(attachment.data, 'image')), mimetype: attachment.mediaType, width: 1, height: 1, ...caption, ...inContext } };
    else if (attachment?.kind === 'voice') {
      // A voice note carries no words: WhatsApp has no caption for one.
      if (text !== '') throw new Error('a WhatsApp voice note has no caption');
      content = { audioMessage: { ...(await upload(attachment.data, 'audio')), mimetype: attachment.mediaType === 'audio/ogg' ? 'audio/ogg; codecs=opus' : attachment.mediaType, ptt: true, seconds: 3, ...inContext } };
    } else if (attachment?.kind === 'document') {
      const document: proto.Message.IDocumentMessage = { ...(await upload(attachment.data, 'document')), mimetype: attachment.mediaType, fileName: attachment.name ?? 'file', title: attachment.name ?? 'file', ...caption, ...inContext };
      // A document with words comes wrapped, as WhatsApp's clients send it now.
      content = text === '' ? { documentMessage: document } : { documentWithCaptionMessage: { message: { documentMessage: document } } };
    } else if (hasContext) content = { extendedTextMessage: { text, contextInfo: context } };
    else content = { conversation: text };
    const group = message.chat === 'group';
    const info = proto.WebMessageInfo.fromObject({
      key: { remoteJid: group ? groupJid : pnJid(message.from), fromMe: false, id, ...(group ? { participant: lidJid(message.from) } : {}) },
      message: content,
      messageTimestamp: Math.floor(Date.now() / 1000),
      pushName: message.from.name,
    }) as WAMessage;
    // What baileys adds to the key from the stanza's addressing (the other form of the sender's id).
    Object.assign(info.key, group ? { participantAlt: pnJid(message.from), addressingMode: 'lid' } : { remoteJidAlt: lidJid(message.from), addressingMode: 'pn' });
    return info;
  }

  function deliverBuilt(message: WAMessage): Delivered {
    push(message);
    const key = message.key;
    return { chatId: key.remoteJid!, messageId: key.id!, deliveryId: `${key.remoteJid}/${key.participant ?? ''}/${key.id}` };
  }

  const fake: FakeWhatsApp = {
    socketFactory,
    mediaOrigin,
    upload,
    expire: media.expire,
    downloads: media.downloads,
    upsert(data) {
      if (current === undefined || current.socket.closed) throw new Error('no open WhatsApp connection to deliver to');
      current.socket.ev.emit('messages.upsert', data as never);
    },
    sockets,
    adapter: undefined as unknown as FakeWhatsApp['adapter'],
    user,
    dmChatId: pnJid,
    groupChatId: groupJid,
    currentQr: () => current?.qr ?? null,
    scan() {
      if (current === undefined || current.qr === null) throw new Error('no QR code is shown to scan');
      current.pair();
    },
    logOut() {
      current?.emitClose(new Boom('Intentional Logout', { statusCode: DisconnectReason.loggedOut }));
    },
    drop() {
      current?.emitClose(new Boom('Connection Terminated', { statusCode: DisconnectReason.connectionClosed }));
    },
    failConnects(count) {
      failing = count;
    },
    reads: () => [...reads],
    presences: () => [...presences],
    makeAdapter: (adapterOptions = {}) =>
      createWhatsAppAdapter({ store: options.store, key: options.key, socketFactory, mediaOrigin, backoffMs: 50, linkPollMs: 100, ...adapterOptions }),
    push,
    async deliver(message) {
      return deliverBuilt(await build(message));
    },
    async deliverContent(from, content) {
      const info = proto.WebMessageInfo.fromObject({ key: { remoteJid: pnJid(from), fromMe: false, id: messageId() }, message: content, messageTimestamp: Math.floor(Date.now() / 1000), pushName: from.name }) as WAMessage;
      Object.assign(info.key, { remoteJidAlt: lidJid(from), addressingMode: 'pn' });
      return deliverBuilt(info);
    },
    async command(from, chat, words) {
      // WhatsApp has no bot commands: a person types them.
      return deliverBuilt(await build({ chat, from, text: `/${words}` }));
    },
    async redeliver(done) {
      const message = delivered.get(done.messageId);
      if (message === undefined) throw new Error(`no delivery ${done.messageId}`);
      // WhatsApp delivers a message again when the device did not acknowledge it (a reconnect, offline messages).
      push(message);
    },
    async press(from, record, decision) {
      const code = /"approve ([0-9A-F]{6})"/.exec(record.text)?.[1];
      if (code === undefined) throw new Error('that message asks for no decision');
      // The owner answers in their chat with the bot, as the message asks.
      const message = await build({ chat: 'dm', from, text: `${decision} ${code}` });
      pressIds.add(message.key.id!);
      push(message);
    },
    pressAnswers: () => [...pressAnswers],
    sent: () => sent.map((record) => ({ ...record, buttons: [...record.buttons] })),
    attempts: () => [...attempts],
    typing: () => [...typing],
    rateLimitNextSend() {
      // WhatsApp's rate-overlimit names no wait: the adapter chooses one (2 s, doubling).
      rateLimitNext = true;
    },
    block(person) {
      blocked.add(pnJid(person));
    },
    unblock(person) {
      blocked.delete(pnJid(person));
    },
    async close() {
      for (const socket of sockets) if (!socket.closed) await socket.end(undefined);
      await media.close();
    },
  };
  return fake;
}

/** The decision a message asks for, read the way the owner reads it: `Reply "approve CODE" or "reject CODE" (approval ID).` */
function approvalButtons(text: string): SentRecord['buttons'] {
  const match = /Reply "approve ([0-9A-F]{6})" or "reject \1" \(approval ([0-9a-f-]{36})\)\.$/.exec(text);
  if (match === null) return [];
  return [
    { approvalId: match[2]!, decision: 'approve' },
    { approvalId: match[2]!, decision: 'reject' },
  ];
}

function messageId(): string {
  return `3EB0${randomBytes(8).toString('hex').toUpperCase()}`;
}

/** Link the account through the far side: the QR code is shown, and scanned. */
export async function linkThrough(fake: FakeWhatsApp, options: { store: LinkedDeviceStore; key: InstallationKey }): Promise<string> {
  const { phone } = await linkWhatsApp({
    ...options,
    socketFactory: fake.socketFactory,
    onQr: () => void setImmediate(() => fake.scan()),
  });
  return phone;
}
