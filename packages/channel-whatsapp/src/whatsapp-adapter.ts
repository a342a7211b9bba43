import type { InstallationKey } from '@roster/config';
import type { LinkedDeviceStore, ChannelLogger as Logger } from '@roster/contracts';
import { ChannelError, type ChannelAdapter, type ChannelEvent, type ChannelStartOptions, type ChannelTarget } from '@roster/channels';
import type { InboundFile } from '@roster/contracts';
import {
  getContentType,
  isJidBroadcast,
  isJidGroup,
  isJidNewsletter,
  isJidStatusBroadcast,
  jidDecode,
  jidNormalizedUser,
  normalizeMessageContent,
  type Contact,
  type WAMessage,
  type WAMessageKey,
  type proto,
} from 'baileys';
import { safeError, WhatsAppConnection, type WhatsAppSocket, type WhatsAppSocketFactory } from './connection.js';
import { rateLimitWaitMs, toChannelError } from './channel-errors.js';
import { chatJidOf, handleOf, toJid, withoutMentions } from './jids.js';
import { fetchAttachment, mediaOf, type Attachment } from './media.js';
import { WhatsAppSession } from './session.js';

export interface WhatsAppAdapterOptions {
  /** Where the account's session is kept (the host's, in Roster's database); its account is the adapter's, in Roster's bindings. */
  store: LinkedDeviceStore;
  /** The installation key: it seals the session before the store sees it, and opens it. */
  key: InstallationKey;
  logger?: Logger;
  /** Makes the socket: baileys' `makeWASocket` unless a test gives one whose far side is a fake. */
  socketFactory?: WhatsAppSocketFactory;
  /** The first wait before reconnecting after a drop (default 1 s; it doubles up to a minute). */
  backoffMs?: number;
  /** How long a send waits for a dropped connection to come back before failing (default 30 s). */
  sendWaitMs?: number;
  /** While not linked, how often to look for a link made by another process (default 10 s). */
  linkPollMs?: number;
  /**
   * Where media is fetched from: WhatsApp's media server (the one a message
   * names, else `https://mmg.whatsapp.net`) unless a test points it at a
   * local server that answers like one.
   */
  mediaOrigin?: string;
}

/**
 * The longest text sent in one message: 4,096 characters, the limit
 * WhatsApp's own clients and its Business API apply to a text message
 * (the protocol carries longer ones, but clients cut or refuse them).
 */
export const whatsappTextLimit = 4096;

/** The longest a rate-overlimit wait grows to: it doubles from `rateLimitWaitMs` while the limit lasts. */
const maxRateLimitWaitMs = 60_000;
/** WhatsApp shows "typing…" until told otherwise; Roster refreshes it every 4 s while answering. */
const typingLapseMs = 8000;
/** Inbound messages kept to quote in an answer. */
const recentLimit = 500;
/** Messages waiting to be marked read: the latest of each chat, in the chats written in last (a sender never answered does not grow it). */
const unreadPerChat = 50;
const unreadChats = 1000;

const pressPattern = /^\s*(approve|reject)(?:\s+#?([0-9a-f]{4,32}|[0-9a-f-]{36}))?\s*[.!]?\s*$/i;

/**
 * The WhatsApp adapter, on baileys: Roster is a linked device of a WhatsApp
 * account (paired by QR code, its session sealed in the host's store). One-to-one
 * messages are for the bot; in a group, a message is for it when it mentions
 * the bot or replies to one of its messages, or is a command. Messages it
 * answers are marked read, and "typing…" shows while agents answer.
 * Approvals are a text the owner answers ("approve 7C9E66"), since buttons
 * are not delivered reliably on current WhatsApp.
 */
export function createWhatsAppAdapter(options: WhatsAppAdapterOptions): ChannelAdapter {
  const store = new WhatsAppSession(options.store, options.key);
  const account = store.account;
  let connection: WhatsAppConnection | undefined;
  let rateWaitMs = rateLimitWaitMs;
  /** Received messages not marked read yet, by chat: marked when the bot answers or types there. */
  const unread = new Map<string, WAMessageKey[]>();
  const recent = new Map<string, WAMessage>();
  const typingIn = new Map<string, NodeJS.Timeout>();
  /** Approvals sent this run: by id, and by the id of the message that asks for the decision. */
  const approvals = new Set<string>();
  const approvalMessages = new Map<string, string>();

  const log = () => connection?.log;

  async function ready(): Promise<WhatsAppSocket> {
    if (connection === undefined) throw new ChannelError('failed', 'The WhatsApp adapter is not started.');
    if (connection.me === undefined && !(await connection.whenOpen(options.sendWaitMs ?? 30_000))) {
      throw new ChannelError('failed', 'WhatsApp is not connected (see roster doctor: it may need linking again).', { retryable: true });
    }
    const socket = connection.current;
    if (socket === undefined) throw new ChannelError('failed', 'WhatsApp is not connected.', { retryable: true });
    return socket;
  }

  async function call<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      const result = await run();
      rateWaitMs = rateLimitWaitMs;
      return result;
    } catch (error) {
      const failure = toChannelError(what, error, rateWaitMs);
      if (failure.failure === 'rate-limited') rateWaitMs = Math.min(rateWaitMs * 2, maxRateLimitWaitMs);
      throw failure;
    }
  }

  function bot(): { pn: string | undefined; lid: string | undefined } {
    const me = connection?.me;
    return { pn: me?.id === undefined ? undefined : jidNormalizedUser(me.id), lid: me?.lid === undefined ? undefined : jidNormalizedUser(me.lid) };
  }

  function isBot(jid: unknown): boolean {
    if (typeof jid !== 'string' || jid === '') return false;
    const { pn, lid } = bot();
    const normal = jidNormalizedUser(jid);
    return normal === pn || normal === lid;
  }

  function conversationId(jid: string): string {
    return account === 'default' ? jid : `${account}:${jid}`;
  }

  function remember(message: WAMessage): void {
    const id = message.key.id;
    if (id === undefined || id === null) return;
    recent.set(id, message);
    if (recent.size > recentLimit) recent.delete(recent.keys().next().value!);
  }

  /**
   * A received message as Roster's event; null when it is not one for Roster
   * (the account's own, a status, a reaction) or not a message at all (a
   * field of the wrong type: baileys decodes what WhatsApp sends, so only a
   * broken client's message is one).
   */
  function toEvent(message: WAMessage): { event: ChannelEvent; press: { decision: 'approve' | 'reject'; approvalId: string } | null } | null {
    if (!isRecord(message) || !isRecord(message.key)) return null;
    const key = message.key;
    const chat = key.remoteJid;
    if (connection?.me === undefined || typeof chat !== 'string' || key.fromMe === true || typeof key.id !== 'string' || key.id === '') return null;
    if (isJidStatusBroadcast(chat) || isJidBroadcast(chat) || isJidNewsletter(chat)) return null;
    const content = normalizeMessageContent(message.message);
    if (typeof content !== 'object' || content === null) return null;
    const type = getContentType(content);
    const group = isJidGroup(chat) === true;
    const inner = type === undefined ? undefined : (content[type] as { contextInfo?: proto.IContextInfo | null } | null | undefined);
    // Words come as plain text, extended text (with a mention or a quote), or a caption; a reaction, a poll or an edit is not a message.
    const raw =
      [content.conversation, content.extendedTextMessage?.text, content.imageMessage?.caption, content.videoMessage?.caption, content.documentMessage?.caption].find(
        (words): words is string => typeof words === 'string',
      ) ?? '';
    const { media, attachments } = mediaOf(content);
    if (raw.trim() === '' && media.length === 0) return null;

    const context = isRecord(inner) && isRecord(inner.contextInfo) ? inner.contextInfo : undefined;
    const sender = group ? key.participant : chat;
    if (typeof sender !== 'string' || sender === '') return null;
    const alt = group ? key.participantAlt : key.remoteJidAlt;
    const senderAlt = typeof alt === 'string' ? alt : undefined;
    const handle = handleOf(sender, senderAlt);
    const mentioned = context?.mentionedJid;
    const mentionsBot = Array.isArray(mentioned) && mentioned.some((jid) => isBot(jid));
    const text = mentionsBot ? withoutMentions(raw, bot()) : raw.trim();
    const replyTo = typeof context?.stanzaId === 'string' ? context.stanzaId : null;
    const replyToBot = replyTo !== null && (isBot(context?.participant) || approvalMessages.has(replyTo) || (recent.get(replyTo)?.key.fromMe ?? false));
    const chatOf = group ? chat : chatJidOf(sender, senderAlt);
    const target: ChannelTarget = { chatId: chat };
    if (group) target.replyTo = key.id;
    else target.recipient = handle;
    const event: ChannelEvent = {
      inbound: {
        channel: 'whatsapp',
        account,
        conversation: { externalId: conversationId(chatOf), kind: group ? 'group' : 'dm' },
        sender: { externalId: handle, ...(typeof message.pushName !== 'string' || message.pushName === '' ? {} : { displayName: message.pushName }) },
        externalMessageId: key.id,
        text,
      },
      mentionsBot,
      replyTo,
      replyToBot,
      media,
      ...(attachments.length === 0 ? {} : { fetchFiles: (signal: AbortSignal) => fetchFiles(attachments, media, signal) }),
      target,
      deliveryId: `${chat}/${typeof key.participant === 'string' ? key.participant : ''}/${key.id}`,
    };
    return { event, press: group ? null : approvalPress(text, replyTo) };
  }

  /**
   * The files of a message, from WhatsApp's media servers, decrypted with
   * the message's media key (a message carries one file). Videos are skipped.
   */
  async function fetchFiles(attachments: readonly Attachment[], media: ChannelEvent['media'], signal: AbortSignal) {
    const files: InboundFile[] = [];
    for (const attachment of attachments) files.push(await fetchAttachment(attachment, { signal, ...(options.mediaOrigin === undefined ? {} : { origin: options.mediaOrigin }) }));
    return { files, skipped: media.filter((kind) => kind === 'video') };
  }

  /** "approve 7C9E66" (or "approve" in reply to the approval's message) for an approval sent this run. */
  function approvalPress(text: string, replyTo: string | null): { decision: 'approve' | 'reject'; approvalId: string } | null {
    const match = pressPattern.exec(text);
    if (match === null) return null;
    const decision = match[1]!.toLowerCase() as 'approve' | 'reject';
    if (match[2] !== undefined) {
      const code = match[2].toLowerCase().replace(/-/g, '');
      const found = [...approvals].filter((id) => id.replace(/-/g, '').startsWith(code));
      return found.length === 1 ? { decision, approvalId: found[0]! } : null;
    }
    const approvalId = replyTo === null ? undefined : approvalMessages.get(replyTo);
    return approvalId === undefined ? null : { decision, approvalId };
  }

  function take(start: ChannelStartOptions, message: WAMessage): void {
    const taken = toEvent(message);
    if (taken === null) return;
    remember(message);
    const { event, press } = taken;
    const chat = event.target.chatId;
    // Only what is for the bot waits to be marked read: group chatter it does not answer stays as it is.
    const forBot = event.inbound.conversation.kind === 'dm' || event.mentionsBot || event.replyToBot || event.inbound.text.startsWith('/');
    if (forBot) {
      const keys = [...(unread.get(chat) ?? []), message.key].slice(-unreadPerChat);
      unread.delete(chat);
      unread.set(chat, keys);
      if (unread.size > unreadChats) unread.delete(unread.keys().next().value!);
    }
    if (press === null) {
      void start.onMessage(event);
      return;
    }
    void start
      .onApprovalPress({
        approvalId: press.approvalId,
        decision: press.decision,
        sender: { externalId: event.target.recipient!, ...(event.inbound.sender.displayName === undefined ? {} : { displayName: event.inbound.sender.displayName }) },
        target: { chatId: chat },
      })
      .then(async (result) => {
        if (result.decided) {
          approvals.delete(press.approvalId);
          for (const [id, approvalId] of approvalMessages) if (approvalId === press.approvalId) approvalMessages.delete(id);
        }
        await adapter.sendText({ chatId: chat, replyTo: message.key.id!, recipient: event.inbound.sender.externalId! }, result.text);
      })
      .catch((error: unknown) => log()?.error({ err: safeError(error) }, 'an approval reply could not be handled'));
  }

  /** Mark what was received in this chat read: the bot is answering it. */
  async function markRead(socket: WhatsAppSocket, jid: string): Promise<void> {
    const keys = unread.get(jid);
    if (keys === undefined || keys.length === 0) return;
    unread.delete(jid);
    await socket.readMessages(keys).catch((error: unknown) => log()?.debug({ err: safeError(error) }, 'read receipts failed'));
  }

  async function stopTyping(socket: WhatsAppSocket, jid: string): Promise<void> {
    const timer = typingIn.get(jid);
    if (timer === undefined) return;
    clearTimeout(timer);
    typingIn.delete(jid);
    await socket.sendPresenceUpdate('paused', jid).catch(() => undefined);
  }

  async function post(target: ChannelTarget, text: string): Promise<string> {
    const socket = await ready();
    const jid = toJid(target.chatId);
    await markRead(socket, jid);
    await stopTyping(socket, jid);
    const quoted = target.replyTo === undefined ? undefined : recent.get(target.replyTo);
    const sent = await call('sendMessage', () => socket.sendMessage(jid, { text }, quoted === undefined ? undefined : { quoted }));
    return sent?.key.id ?? '';
  }

  const adapter: ChannelAdapter = {
    channel: 'whatsapp',
    account,
    capabilities: { threads: false, buttons: false, media: true, typing: true, textLimit: whatsappTextLimit, commandPrefix: '/' },

    async start(start) {
      let settle: () => void = () => undefined;
      const settled = new Promise<void>((resolve) => (settle = resolve));
      connection = new WhatsAppConnection(
        { store, ...(options.socketFactory === undefined ? {} : { socketFactory: options.socketFactory }), ...(options.logger === undefined ? {} : { logger: options.logger }), ...(options.backoffMs === undefined ? {} : { backoffMs: options.backoffMs }), ...(options.linkPollMs === undefined ? {} : { linkPollMs: options.linkPollMs }) },
        {
          onSocket(socket) {
            socket.ev.on('messages.upsert', (upsert) => {
              // `notify`: new messages; `append` is history and the account's own, not for Roster.
              if (!isRecord(upsert) || upsert.type !== 'notify' || !Array.isArray(upsert.messages)) return;
              for (const message of upsert.messages) {
                // One message that cannot be read is dropped; it never stops the others, nor the socket that emitted it.
                try {
                  take(start, message);
                } catch (error) {
                  log()?.warn({ err: safeError(error) }, 'a WhatsApp message could not be read; it was dropped');
                }
              }
            });
          },
          onQr: () => {
            connection?.log?.info('WhatsApp waits for a QR code scan: run roster channel add whatsapp, or open the Channels page');
            settle();
          },
          onOpen: (user: Contact) => {
            connection?.log?.info({ phone: `+${jidDecode(user.id)?.user ?? ''}` }, 'WhatsApp receiving');
            settle();
          },
          onLoggedOut: settle,
          onPairingExpired: settle,
          onReconnecting: settle,
        },
      );
      await connection.start();
      // Receiving, or waiting for a scan or for the connection to come back: nothing blocks the other channels.
      await Promise.race([settled, connection.whenOpen(options.sendWaitMs ?? 30_000)]);
    },

    async stop() {
      for (const timer of typingIn.values()) clearTimeout(timer);
      typingIn.clear();
      await connection?.stop();
    },

    async sendText(target, text) {
      return { id: await post(target, text) };
    },

    async editText(target, messageId, text) {
      const socket = await ready();
      const jid = toJid(target.chatId);
      await call('sendMessage (edit)', () => socket.sendMessage(jid, { text, edit: { remoteJid: jid, fromMe: true, id: messageId } }));
    },

    async sendApproval(target, approval) {
      const code = approvalCode(approval.id);
      const ask = `Reply "approve ${code}" or "reject ${code}" (approval ${approval.id}).`;
      let id: string;
      if (approval.text.length + 2 + ask.length <= whatsappTextLimit) id = await post(target, `${approval.text}\n\n${ask}`);
      else {
        await post(target, approval.text);
        id = await post(target, ask);
      }
      approvals.add(approval.id);
      approvalMessages.set(id, approval.id);
      return { id };
    },

    async sendTyping(target) {
      const socket = connection?.current;
      if (socket === undefined || connection?.me === undefined) return;
      const jid = toJid(target.chatId);
      await markRead(socket, jid);
      const lapse = typingIn.get(jid);
      if (lapse !== undefined) clearTimeout(lapse);
      // Not refreshed for a while: the answer ended without a message, so stop showing it.
      const timer = setTimeout(() => {
        typingIn.delete(jid);
        void socket.sendPresenceUpdate('paused', jid).catch(() => undefined);
      }, typingLapseMs);
      timer.unref();
      typingIn.set(jid, timer);
      await call('sendPresenceUpdate', () => socket.sendPresenceUpdate('composing', jid));
    },
  };
  return adapter;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The short code an owner types to decide: the approval id's first six hex digits. */
export function approvalCode(approvalId: string): string {
  return approvalId.replace(/-/g, '').slice(0, 6).toUpperCase();
}
