import { ChannelError, RecentDeliveries, downloadFile, tooLargeText, type ChannelEvent, type ChannelStartOptions, type ChannelTarget } from '@roster/channels';
import { maxFileBytes, type ChannelLogger, type FileKind, type InboundFile } from '@roster/contracts';
import type { MatrixClient, MatrixEvent, Room } from 'matrix-js-sdk';
import { safeError } from './matrix-errors.js';
import {
  addressing,
  approvalField,
  approvalText,
  conversationId,
  editContent,
  encryptedRoomNotice,
  matchesInviter,
  matrixChannel,
  matrixCommand,
  noticeField,
  quotedSender,
  reactionDecision,
  replyDecision,
  replyTarget,
  unencryptedOnly,
  type MessageContent,
} from './matrix-text.js';

/** What the receiver needs of the adapter that made it. */
export interface ReceiverContext {
  client: MatrixClient;
  /** The bot's user id, from `/account/whoami`. */
  userId: string;
  /** The bot's global display name, or null. */
  displayName: string | null;
  account: string;
  accessToken: string;
  /** Who may invite the bot to a group room (`MATRIX_ROOM_INVITERS`); anyone may open a direct chat. */
  roomInviters: readonly string[];
  /** Before the first sync is done, events at most this old are caught up; older ones were answered before, or are stale. */
  catchUpMs: number;
  start: ChannelStartOptions;
  log: ChannelLogger | undefined;
  /** Put one event in a room (429s waited out), resolving to its event id. */
  send(roomId: string, type: string, content: Record<string, unknown>, what: string): Promise<string>;
  /** Take back one of the bot's events (its own reactions on a decided approval). */
  redact(roomId: string, eventId: string): Promise<void>;
  /** Whether the bot sent this event (kept for a while after sending). */
  sentByBot(eventId: string): boolean;
}

/** An approval message the bot sent: a reaction or a reply on it decides. */
export interface ApprovalMessage {
  eventId: string;
  approvalId: string;
  /** Its text, without the instructions. */
  text: string;
  /** The bot's own one-tap reactions on it, taken back once decided. */
  reactions: string[];
}

/** A file a message carries, as Matrix describes it before it is fetched. */
interface Attachment {
  url: string;
  size: number | undefined;
  kind: FileKind;
  mediaType: string;
  name: string | undefined;
}

const mediaKinds: Record<string, ChannelEvent['media'][number]> = { 'm.image': 'image', 'm.audio': 'audio', 'm.file': 'file', 'm.video': 'video' };

/** A bounded map that forgets its oldest entries. */
class Recent<V> {
  private readonly entries = new Map<string, V>();
  constructor(private readonly capacity = 5000) {}
  get(key: string): V | undefined {
    return this.entries.get(key);
  }
  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }
}

/**
 * Turns what `/sync` brings into Roster's events: messages into
 * `ChannelEvent`s, reactions and replies on an approval into presses,
 * invitations into joins (or refusals), and anything encrypted into one plain
 * notice per room. Every event id is handled once, whatever the sync replays.
 */
export function createReceiver(context: ReceiverContext) {
  const { client, userId, log } = context;
  const seen = new RecentDeliveries();
  const approvals = new Recent<ApprovalMessage>();
  /** Who sent the messages the bot may answer, so that an answer in a group mentions the person it answers. */
  const senders = new Recent<string>();
  const invitations = new Set<string>();
  const told = new Set<string>();
  let prepared = false;

  /** Caught-up events are answered only when recent: the first sync after a start replays each room's last events. */
  const live = (event: MatrixEvent): boolean => prepared || Date.now() - event.getTs() <= context.catchUpMs;

  /** The people in a room now (joined or invited, the bot included). */
  function members(room: Room): Set<string> {
    return new Set(room.getMembers().filter((member) => member.membership === 'join' || member.membership === 'invite').map((member) => member.userId));
  }

  /** An event from before the bot joined the room (history a join brings along): not said to the bot. */
  function beforeJoin(room: Room | null, event: MatrixEvent): boolean {
    const joined = room?.getMember(userId)?.events.member;
    return joined !== undefined && joined !== null && joined.getContent().membership === 'join' && event.getTs() < joined.getTs();
  }

  function approvalOf(eventId: string, sender: string | undefined, content: Record<string, unknown> | undefined): ApprovalMessage | null {
    if (sender !== userId || content === undefined) return null;
    const field = content[approvalField] as { id?: unknown } | undefined;
    if (typeof field?.id !== 'string') return null;
    return { eventId, approvalId: field.id, text: approvalText(typeof content.body === 'string' ? content.body : ''), reactions: [] };
  }

  /** The approval an event is, from what is known here: undefined when the event is not known here at all. */
  function knownApproval(roomId: string, eventId: string): ApprovalMessage | null | undefined {
    const known = approvals.get(eventId);
    if (known !== undefined) return known;
    const event = client.getRoom(roomId)?.findEventById(eventId);
    return event === undefined ? undefined : approvalOf(eventId, event.getSender(), event.getContent());
  }

  /** The approval an event is, asking the homeserver when it is not known here (an approval sent before a restart). */
  async function findApproval(roomId: string, eventId: string): Promise<ApprovalMessage | null> {
    const known = knownApproval(roomId, eventId);
    if (known !== undefined) return known;
    try {
      const event = await client.fetchRoomEvent(roomId, eventId);
      return approvalOf(eventId, event.sender, event.content as Record<string, unknown> | undefined);
    } catch (error) {
      log?.debug({ err: safeError(error) }, 'the event a reaction or reply points at could not be fetched');
      return null;
    }
  }

  /**
   * A press on an approval: the owner's word decides, anyone else is told
   * they do not. Caught up after a restart, a press that decides nothing
   * (it was decided before) is not answered again.
   */
  async function press(approval: ApprovalMessage, decision: 'approve' | 'reject', sender: string, roomId: string, caughtUp: boolean): Promise<void> {
    const displayName = client.getRoom(roomId)?.getMember(sender)?.rawDisplayName;
    let result: { text: string; decided: boolean };
    try {
      result = await context.start.onApprovalPress({
        approvalId: approval.approvalId,
        decision,
        sender: { externalId: sender, ...(displayName === undefined || displayName === sender ? {} : { displayName }) },
        target: { chatId: roomId },
      });
    } catch (error) {
      log?.error({ err: safeError(error) }, 'an approval press could not be handled');
      return;
    }
    if (caughtUp && !result.decided) {
      log?.info('a press from before the restart decided nothing; not answered again');
      return;
    }
    try {
      await context.send(
        roomId,
        'm.room.message',
        { msgtype: 'm.notice', body: result.text, 'm.relates_to': { 'm.in_reply_to': { event_id: approval.eventId } }, 'm.mentions': { user_ids: [sender] } },
        'approval answer',
      );
      if (!result.decided) return;
      await context.send(roomId, 'm.room.message', editContent(approval.eventId, `${approval.text}\n\n${result.text}`), 'approval edit');
      for (const reaction of approval.reactions.splice(0)) {
        await context.redact(roomId, reaction).catch((error: unknown) => log?.debug({ err: safeError(error) }, 'a reaction of the bot could not be taken back'));
      }
    } catch (error) {
      log?.warn({ err: safeError(error) }, 'the answer to an approval press could not be sent');
    }
  }

  /** One plain notice per room that the bot reads unencrypted rooms only (not repeated after a restart when the room shows it). */
  function tellEncrypted(roomId: string, room: Room | null): void {
    if (told.has(roomId)) return;
    told.add(roomId);
    const shown = room?.getLiveTimeline().getEvents().some((event) => event.getSender() === userId && event.getContent()[noticeField] === unencryptedOnly);
    if (shown === true) return;
    void context
      .send(roomId, 'm.room.message', { msgtype: 'm.notice', body: encryptedRoomNotice, [noticeField]: unencryptedOnly, 'm.mentions': {} }, 'notice')
      .then(
        () => log?.info({ room: roomId }, 'an encrypted room was told that this bot reads unencrypted rooms only; its messages are not read'),
        (error: unknown) => {
          told.delete(roomId);
          log?.warn({ err: safeError(error), room: roomId }, 'an encrypted room could not be told that this bot reads unencrypted rooms only');
        },
      );
  }

  /** Direct chats are joined from anyone (the core's policy decides what a stranger gets); group rooms from `MATRIX_ROOM_INVITERS` only. */
  async function invitation(event: MatrixEvent, roomId: string): Promise<void> {
    const inviter = event.getSender() ?? '';
    const direct = event.getContent().is_direct === true;
    try {
      if (direct || matchesInviter(inviter, context.roomInviters)) {
        await client.joinRoom(roomId);
        log?.info({ room: roomId, inviter, direct }, 'joined a room the bot was invited to');
      } else {
        await client.leave(roomId);
        log?.info({ room: roomId, inviter }, 'declined an invitation to a group room: list the inviter (or *:their.server) in MATRIX_ROOM_INVITERS to accept it');
      }
    } catch (error) {
      invitations.delete(roomId);
      log?.warn({ err: safeError(error), room: roomId }, 'an invitation could not be answered');
    }
  }

  function ownMembership(event: MatrixEvent, roomId: string, room: Room | null): void {
    const membership = event.getContent().membership;
    if (membership === 'invite') {
      if (room?.getMyMembership() === 'invite' && !invitations.has(roomId)) {
        invitations.add(roomId);
        void invitation(event, roomId);
      }
      return;
    }
    invitations.delete(roomId);
    if (membership === 'join' && room?.hasEncryptionStateEvent() === true && live(event)) tellEncrypted(roomId, room);
  }

  async function fetchFiles(attachments: readonly Attachment[], media: ChannelEvent['media'], signal: AbortSignal) {
    const authenticated = await client.isVersionSupported('v1.11').catch(() => false);
    const files: InboundFile[] = [];
    for (const attachment of attachments) {
      if (attachment.size !== undefined && attachment.size > maxFileBytes) throw new ChannelError('failed', tooLargeText(attachment.kind));
      const url = client.mxcUrlToHttp(attachment.url, undefined, undefined, undefined, false, true, authenticated);
      if (url === null || url === '') throw new ChannelError('failed', 'Matrix gave no address for the file; send it again.', { retryable: false });
      const data = await downloadFile(url, { kind: attachment.kind, platform: 'Matrix', headers: { Authorization: `Bearer ${context.accessToken}` }, signal });
      files.push({ kind: attachment.kind, mediaType: attachment.mediaType, data, ...(attachment.name === undefined ? {} : { name: attachment.name }) });
    }
    return { files, skipped: media.filter((kind) => kind === 'video') };
  }

  function message(event: MatrixEvent, roomId: string, room: Room | null, sender: string, eventId: string): void {
    const content = event.getContent() as MessageContent & Record<string, unknown>;
    const msgtype = typeof content.msgtype === 'string' ? content.msgtype : '';
    // Bots speak in notices (this one too): answering them would loop. An edit is not a new message.
    if (msgtype === 'm.notice' || (content['m.relates_to'] as { rel_type?: unknown } | undefined)?.rel_type === 'm.replace') return;
    if (beforeJoin(room, event)) return;
    const people = room === null ? null : members(room);
    const kind = people !== null && people.size <= 2 && people.has(sender) ? 'dm' : 'group';
    const mediaKind = mediaKinds[msgtype];
    // A file's body is its name, unless a `filename` beside it makes the body a caption (Matrix 1.10).
    const caption = mediaKind === undefined ? content.body : typeof content.filename === 'string' && content.filename !== content.body ? content.body : '';
    const roomName = room?.getMember(userId)?.rawDisplayName;
    const names = [...new Set([roomName, context.displayName].filter((name): name is string => typeof name === 'string' && name !== '' && name !== userId))];
    const address = addressing({ ...content, body: caption }, { userId, displayNames: names });
    const replyId = replyTarget(content);
    senders.set(eventId, sender);

    const decision = replyId === null ? null : replyDecision(address.text);
    if (replyId !== null && decision !== null) {
      const approval = knownApproval(roomId, replyId);
      if (approval !== null) {
        // A reply that decides an approval is a press, not words for the agents; one not known here is looked up first.
        void (async () => {
          const found = approval ?? (await findApproval(roomId, replyId));
          if (found !== null) await press(found, decision, sender, roomId, !prepared);
          else hand();
        })();
        return;
      }
    }
    hand();

    function hand(): void {
      const command = matrixCommand(address.text);
      if (command.foreign && kind === 'group') return;
      const replied = replyId === null ? undefined : context.sentByBot(replyId) ? userId : (room?.findEventById(replyId)?.getSender() ?? undefined);
      const body = typeof content.body === 'string' ? content.body : '';
      // Element marks a reply with its target's sender in `m.mentions`: the bot there, without its name in the words, is a reply to it.
      const replyToBot = replyId !== null && (replied === userId || (replied === undefined && quotedSender(body) === userId) || (address.mentioned && !address.namesBot));
      const mentionsBot = address.namesBot || (address.mentioned && !replyToBot);
      const media: ChannelEvent['media'] = [];
      const attachments: Attachment[] = [];
      if (mediaKind !== undefined) {
        const voice = mediaKind === 'audio' && content['org.matrix.msc3245.voice'] !== undefined;
        media.push(voice ? 'voice' : mediaKind);
        const info = (content.info ?? {}) as { size?: unknown; mimetype?: unknown };
        const mediaType = typeof info.mimetype === 'string' ? info.mimetype : 'application/octet-stream';
        const fileKind: FileKind = mediaKind === 'image' ? 'image' : mediaKind === 'audio' ? 'audio' : mediaType.startsWith('image/') ? 'image' : mediaType.startsWith('audio/') ? 'audio' : 'file';
        // An encrypted file (`file` instead of `url`) lives in encrypted rooms only, which are not read.
        if (mediaKind !== 'video' && typeof content.url === 'string') {
          const name = typeof content.filename === 'string' ? content.filename : typeof content.body === 'string' && content.body !== caption ? content.body : undefined;
          attachments.push({ url: content.url, size: typeof info.size === 'number' ? info.size : undefined, kind: fileKind, mediaType, name });
        }
      }
      const relation = content['m.relates_to'] as { rel_type?: unknown; event_id?: unknown } | undefined;
      const target: ChannelTarget = { chatId: roomId };
      if (kind === 'dm') target.recipient = sender;
      else target.replyTo = eventId;
      if (relation?.rel_type === 'm.thread' && typeof relation.event_id === 'string') target.threadId = relation.event_id;
      const displayName = room?.getMember(sender)?.rawDisplayName;
      void context.start.onMessage({
        inbound: {
          channel: matrixChannel,
          account: context.account,
          conversation: { externalId: conversationId(context.account, roomId, kind, sender), kind },
          sender: { externalId: sender, ...(displayName === undefined || displayName === sender ? {} : { displayName }) },
          externalMessageId: eventId,
          text: command.text,
        },
        mentionsBot,
        replyTo: replyId,
        replyToBot,
        media,
        ...(attachments.length === 0 ? {} : { fetchFiles: (signal: AbortSignal) => fetchFiles(attachments, media, signal) }),
        target,
        deliveryId: eventId,
      });
    }
  }

  async function reaction(event: MatrixEvent, roomId: string, sender: string): Promise<void> {
    const relation = event.getContent()['m.relates_to'] as { rel_type?: unknown; event_id?: unknown; key?: unknown } | undefined;
    if (relation?.rel_type !== 'm.annotation' || typeof relation.event_id !== 'string' || typeof relation.key !== 'string') return;
    const decision = reactionDecision(relation.key);
    if (decision === null) return;
    const caughtUp = !prepared;
    const approval = await findApproval(roomId, relation.event_id);
    if (approval !== null) await press(approval, decision, sender, roomId, caughtUp);
  }

  return {
    /** One event of a sync, as the SDK emits it (`ClientEvent.Event`), after the room's state took it in. */
    receive(event: MatrixEvent): void {
      const roomId = event.getRoomId();
      if (roomId === undefined) return;
      const room = client.getRoom(roomId);
      const type = event.getType();
      if (type === 'm.room.member' && event.getStateKey() === userId) {
        ownMembership(event, roomId, room);
        return;
      }
      const sender = event.getSender();
      const eventId = event.getId();
      if (sender === undefined || sender === userId || eventId === undefined || !live(event)) return;
      if (type !== 'm.room.message' && type !== 'm.reaction' && type !== 'm.room.encrypted' && type !== 'm.sticker') return;
      if (!seen.first(eventId)) {
        log?.debug('a replayed event was dropped');
        return;
      }
      if (type === 'm.room.encrypted' || room?.hasEncryptionStateEvent() === true) {
        // Even a plain message in an encrypted room is not answered: the answer would break the room's promise.
        if (type !== 'm.reaction') tellEncrypted(roomId, room);
        log?.debug({ room: roomId }, 'an event in an encrypted room was not read');
        return;
      }
      if (type === 'm.room.message') message(event, roomId, room, sender, eventId);
      else if (type === 'm.reaction') void reaction(event, roomId, sender).catch((error: unknown) => log?.error({ err: safeError(error) }, 'a reaction could not be handled'));
    },
    /** The first sync is done: from now on every event is live. */
    prepared(): void {
      prepared = true;
    },
    /** An approval message the bot just sent. */
    rememberApproval(approval: ApprovalMessage): void {
      approvals.set(approval.eventId, approval);
    },
    /** The sender of a message the bot may answer, when known. */
    senderOf(eventId: string): string | undefined {
      return senders.get(eventId);
    },
  };
}

export type Receiver = ReturnType<typeof createReceiver>;
