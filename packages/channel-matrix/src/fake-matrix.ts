/**
 * A fake of Matrix's far side for the channel conformance suite and the
 * adapter's own tests: a local homeserver (`fake-server.ts`, `fake-homeserver.ts`)
 * with people who write as Element does (a mention is a pill and
 * `m.mentions`; a reply names its target's sender in `m.mentions`), and the
 * homeserver's failures on demand: `M_LIMIT_EXCEEDED` with `retry_after_ms`
 * (or a Retry-After header), `M_FORBIDDEN` from a room the person threw the
 * bot out of, a sync connection that breaks. Test-only, on the package's
 * `./testing` entry.
 */
import { fakePicture, type Delivered, type FakePlatform, type PlatformMessage, type PlatformUser, type SendAttempt, type SentRecord } from '@roster/channels/testing';
import type { ChannelLogger } from '@roster/contracts';
import { createHomeserverState, type FakeEvent } from './fake-homeserver.js';
import { startFakeServer, type Refusal } from './fake-server.js';
import { createMatrixAdapter, type MatrixAdapter, type MatrixAdapterOptions } from './matrix-adapter.js';
import { approvalField, approveKey, rejectKey } from './matrix-text.js';

export interface FakeMatrix extends FakePlatform {
  readonly adapter: MatrixAdapter;
  readonly homeserverUrl: string;
  readonly accessToken: string;
  readonly botUserId: string;
  /** A new adapter against this homeserver (a restart: it keeps nothing of another's sync); stopped by `close`. */
  makeAdapter(options?: Partial<MatrixAdapterOptions>): MatrixAdapter;
  /** Invite the bot to a new room (with `others` in it already); resolves its id once the bot has synced the invitation. */
  invite(options: { from: PlatformUser; direct: boolean; others?: PlatformUser[]; encrypted?: boolean }): Promise<string>;
  /** A new group room the bot is in already, with these people; resolves its id once the bot has synced it. */
  group(options: { people: PlatformUser[]; encrypted?: boolean }): Promise<string>;
  /** The bot's membership of a room as the homeserver has it (join, invite, leave). */
  membership(roomId: string): string | undefined;
  /** A message with this content, from this person, in a room; resolves once the bot has synced past it. */
  say(roomId: string, from: PlatformUser, content: Record<string, unknown>): Promise<Delivered>;
  /** A message put in a room while no bot is syncing (it is taken later, or never): returns at once. */
  queue(roomId: string, from: PlatformUser, content: Record<string, unknown>): Delivered;
  /** An end-to-end encrypted message, as a client with encryption sends it. */
  sayEncrypted(roomId: string, from: PlatformUser): Promise<Delivered>;
  /** A reaction, as a person, on an event. */
  react(roomId: string, from: PlatformUser, eventId: string, key: string): Promise<Delivered>;
  /** The next message the bot sends is refused with a 429 asking to wait `retryAfterMs`, in the body or as a Retry-After header. */
  rateLimitNext(options: { retryAfterMs: number; header?: boolean }): void;
  /** Break the sync connections held open now; returns how many. */
  dropSyncs(): number;
  /** Break the next sync connection that carries events, before the bot gets them. */
  dropNextSync(): void;
  /** Every edit the homeserver accepted, in order. */
  edits(): Array<{ id: string; text: string; at: number }>;
  /** Every event the bot put in a room (messages, reactions, redactions), in order. */
  botEvents(): FakeEvent[];
  /** Every request, as `METHOD /path`. */
  requests(): string[];
  /** The requests no endpoint of the fake answered. */
  unknownRequests(): string[];
}

const serverName = 'roster.test';
const botUserId = `@roster:${serverName}`;
const botDisplayName = 'Roster';
const groupRoomId = `!team:${serverName}`;
const escapeHtml = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Start the fake homeserver and make an adapter against it (not started). */
export async function startFakeMatrix(options: { logger?: ChannelLogger; adapter?: Partial<MatrixAdapterOptions> } = {}): Promise<FakeMatrix> {
  const accessToken = 'syt_cm9zdGVy_fakeAccessToken_0a1b2c';
  const state = createHomeserverState({ serverName, botUserId });
  const media = new Map<string, { data: Uint8Array; mediaType: string }>();
  const sent: SentRecord[] = [];
  const edits: Array<{ id: string; text: string; at: number }> = [];
  const attempts: SendAttempt[] = [];
  const typing: string[] = [];
  const pressAnswers: string[] = [];
  const botEvents: FakeEvent[] = [];
  const approvalMessages = new Set<string>();
  const blocked = new Set<string>();
  let rateLimit: { retryAfterMs: number; header: boolean } | null = null;
  let rooms = 0;

  const buttonsOf = (content: Record<string, unknown> | undefined): SentRecord['buttons'] => {
    const approval = content?.[approvalField] as { id?: unknown } | undefined;
    return typeof approval?.id === 'string'
      ? [
          { approvalId: approval.id, decision: 'approve' },
          { approvalId: approval.id, decision: 'reject' },
        ]
      : [];
  };

  function refuse(roomId: string, type: string, content: Record<string, unknown>): Refusal | null {
    const message = type === 'm.room.message' && (content['m.relates_to'] as { rel_type?: unknown } | undefined)?.rel_type !== 'm.replace';
    if (message && rateLimit !== null) {
      const { retryAfterMs, header } = rateLimit;
      rateLimit = null;
      attempts.push({ chatId: roomId, at: Date.now(), outcome: 'rate-limited' });
      return {
        status: 429,
        body: { errcode: 'M_LIMIT_EXCEEDED', error: 'Too Many Requests', ...(header ? {} : { retry_after_ms: retryAfterMs }) },
        ...(header ? { headers: { 'retry-after': String(Math.ceil(retryAfterMs / 1000)) } } : {}),
      };
    }
    if (blocked.has(roomId)) {
      if (message) attempts.push({ chatId: roomId, at: Date.now(), outcome: 'blocked' });
      return { status: 403, body: { errcode: 'M_FORBIDDEN', error: `User ${botUserId} not in room ${roomId}` } };
    }
    return null;
  }

  function sentByBot(event: FakeEvent): void {
    botEvents.push(event);
    if (event.type !== 'm.room.message') return;
    const content = event.content;
    const relation = content['m.relates_to'] as { rel_type?: unknown; event_id?: unknown; 'm.in_reply_to'?: { event_id?: unknown } } | undefined;
    if (relation?.rel_type === 'm.replace') {
      const record = sent.find((message) => message.id === relation.event_id);
      const replaced = content['m.new_content'] as Record<string, unknown> | undefined;
      if (record === undefined || replaced === undefined) return;
      record.text = String(replaced.body ?? '');
      record.buttons = buttonsOf(replaced);
      edits.push({ id: record.id, text: record.text, at: Date.now() });
      return;
    }
    const text = String(content.body ?? '');
    const buttons = buttonsOf(content);
    if (buttons.length > 0) approvalMessages.add(event.event_id);
    attempts.push({ chatId: event.room_id, at: Date.now(), outcome: 'sent' });
    sent.push({ id: event.event_id, chatId: event.room_id, text, buttons, at: Date.now() });
    const answered = relation?.['m.in_reply_to']?.event_id;
    if (content.msgtype === 'm.notice' && typeof answered === 'string' && approvalMessages.has(answered)) pressAnswers.push(text);
  }

  const server = await startFakeServer({
    state,
    accessToken,
    botUserId,
    botDisplayName,
    media,
    refuse,
    sentByBot,
    typing(roomId, isTyping) {
      if (blocked.has(roomId)) return { status: 403, body: { errcode: 'M_FORBIDDEN', error: 'Not in room' } };
      if (isTyping) typing.push(roomId);
      return null;
    },
  });

  const adapters: MatrixAdapter[] = [];
  const makeAdapter = (overrides: Partial<MatrixAdapterOptions> = {}): MatrixAdapter => {
    const made = createMatrixAdapter({ homeserverUrl: server.url, accessToken, ...(options.logger === undefined ? {} : { logger: options.logger }), ...options.adapter, ...overrides });
    adapters.push(made);
    return made;
  };

  /** Resolves once the bot synced past a position; a bot that never does fails the test with a reason, not a hang. */
  async function taken(position: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error('the bot did not sync past the event within 30 s')), 30_000);
    });
    try {
      await Promise.race([server.taken(position), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  const member = (roomId: string, user: { id: string; name: string }, membership: string, sender = user.id, extra: Record<string, unknown> = {}) =>
    state.append(roomId, { type: 'm.room.member', sender, state_key: user.id, content: { membership, displayname: user.name, ...extra } });

  function newRoom(roomId: string, creator: PlatformUser, others: readonly PlatformUser[], encrypted: boolean): void {
    state.append(roomId, { type: 'm.room.create', sender: creator.id, state_key: '', content: { creator: creator.id, room_version: '10' } });
    for (const person of [creator, ...others]) member(roomId, person, 'join');
    state.append(roomId, { type: 'm.room.join_rules', sender: creator.id, state_key: '', content: { join_rule: 'invite' } });
    if (encrypted) state.append(roomId, { type: 'm.room.encryption', sender: creator.id, state_key: '', content: { algorithm: 'm.megolm.v1.aes-sha2' } });
  }

  /** The n-th person, who has a direct chat with the bot already (as if they had invited it and it had joined). */
  function user(n: number): PlatformUser {
    const person = { id: `@tess${n}:${serverName}`, name: `Tess ${n}` };
    dmChatId(person);
    return person;
  }
  /** The direct chat of a person and the bot, made on first sight. */
  function dmChatId(person: PlatformUser): string {
    const roomId = `!dm-${person.id.slice(1, person.id.indexOf(':'))}:${serverName}`;
    if (!state.rooms.has(roomId)) {
      newRoom(roomId, person, [], false);
      member(roomId, { id: botUserId, name: botDisplayName }, 'join', botUserId);
    }
    return roomId;
  }
  // The team's room: the bot, and two people who are there before anyone else writes.
  newRoom(groupRoomId, { id: `@hana:${serverName}`, name: 'Hana Host' }, [{ id: `@gil:${serverName}`, name: 'Gil Guest' }], false);
  state.append(groupRoomId, { type: 'm.room.name', sender: `@hana:${serverName}`, state_key: '', content: { name: 'The team' } });
  member(groupRoomId, { id: botUserId, name: botDisplayName }, 'join', botUserId);

  function queue(roomId: string, from: PlatformUser, content: Record<string, unknown>): Delivered & { position: number } {
    if (state.membership(roomId, from.id) !== 'join') member(roomId, from, 'join');
    const { event, position } = state.append(roomId, { type: 'm.room.message', sender: from.id, content });
    return { chatId: roomId, messageId: event.event_id, deliveryId: event.event_id, position };
  }

  async function say(roomId: string, from: PlatformUser, content: Record<string, unknown>): Promise<Delivered> {
    const { position, ...delivered } = queue(roomId, from, content);
    await taken(position);
    return delivered;
  }

  /** A message's content as Element writes it. */
  function contentOf(message: PlatformMessage): Record<string, unknown> {
    const mentions: string[] = [];
    let body = message.text;
    let formatted: string | undefined;
    if (message.mentionBot === true) {
      body = `${botDisplayName}: ${message.text}`;
      formatted = `<a href="https://matrix.to/#/${botUserId}">${botDisplayName}</a>: ${escapeHtml(message.text)}`;
      mentions.push(botUserId);
    }
    let relation: Record<string, unknown> | undefined;
    if (message.replyTo !== undefined) {
      relation = { 'm.in_reply_to': { event_id: message.replyTo.id } };
      // Element names the replied-to message's sender in m.mentions (the bot, for a reply to it).
      const repliedSender = message.replyTo.fromBot ? botUserId : state.event(message.replyTo.id)?.sender;
      if (repliedSender !== undefined && repliedSender !== message.from.id && !mentions.includes(repliedSender)) mentions.push(repliedSender);
    }
    const shared = { 'm.mentions': mentions.length === 0 ? {} : { user_ids: mentions }, ...(relation === undefined ? {} : { 'm.relates_to': relation }) };
    const attachment = message.attachment ?? (message.image === true ? { kind: 'image' as const, data: fakePicture, mediaType: 'image/png', name: 'image.png' } : undefined);
    if (attachment === undefined) return { msgtype: 'm.text', body, ...(formatted === undefined ? {} : { format: 'org.matrix.custom.html', formatted_body: formatted }), ...shared };
    const mediaId = `media${media.size + 1}`;
    media.set(mediaId, { data: attachment.data, mediaType: attachment.mediaType });
    const filename = attachment.name ?? (attachment.kind === 'image' ? 'image.png' : attachment.kind === 'voice' ? 'Voice message.ogg' : 'file.bin');
    const msgtype = attachment.kind === 'image' ? 'm.image' : attachment.kind === 'voice' ? 'm.audio' : 'm.file';
    return {
      msgtype,
      // Matrix 1.10: with a caption the body is the caption and the name goes in `filename`.
      body: body === '' ? filename : body,
      filename,
      url: `mxc://${serverName}/${mediaId}`,
      info: { mimetype: attachment.mediaType, size: attachment.data.byteLength },
      ...(attachment.kind === 'voice' ? { 'org.matrix.msc3245.voice': {}, 'org.matrix.msc1767.audio': { duration: 3000 } } : {}),
      ...shared,
    };
  }

  async function react(roomId: string, from: PlatformUser, eventId: string, key: string): Promise<Delivered> {
    const { event, position } = state.append(roomId, { type: 'm.reaction', sender: from.id, content: { 'm.relates_to': { rel_type: 'm.annotation', event_id: eventId, key } } });
    await taken(position);
    return { chatId: roomId, messageId: event.event_id, deliveryId: event.event_id };
  }

  const fake: FakeMatrix = {
    adapter: makeAdapter(),
    homeserverUrl: server.url,
    accessToken,
    botUserId,
    groupChatId: groupRoomId,
    makeAdapter,
    user,
    dmChatId,
    deliver: (message) => say(message.chat === 'dm' ? dmChatId(message.from) : groupRoomId, message.from, contentOf(message)),
    // `!` is the Matrix bots' command form (Element keeps `/` for its own commands), in a group as in a direct chat.
    command: (from, chat, words) => fake.deliver({ chat, from, text: `!${words}` }),
    async redeliver(delivered) {
      await taken(state.replay(delivered.messageId));
    },
    async press(from, record, decision) {
      await react(record.chatId, from, record.id, decision === 'approve' ? approveKey : rejectKey);
    },
    pressAnswers: () => [...pressAnswers],
    sent: () => sent.map((record) => ({ ...record, buttons: [...record.buttons] })),
    attempts: () => [...attempts],
    typing: () => [...typing],
    rateLimitNextSend(seconds) {
      rateLimit = { retryAfterMs: seconds * 1000, header: false };
    },
    rateLimitNext(next) {
      rateLimit = { retryAfterMs: next.retryAfterMs, header: next.header === true };
    },
    block(person) {
      blocked.add(dmChatId(person));
    },
    unblock(person) {
      blocked.delete(dmChatId(person));
    },
    async invite(invitation) {
      const roomId = `!room${(rooms += 1)}:${serverName}`;
      newRoom(roomId, invitation.from, invitation.others ?? [], invitation.encrypted === true);
      const { position } = member(roomId, { id: botUserId, name: botDisplayName }, 'invite', invitation.from.id, invitation.direct ? { is_direct: true } : {});
      await taken(position);
      return roomId;
    },
    async group(room) {
      const [creator, ...others] = room.people;
      if (creator === undefined) throw new Error('a group needs at least one person');
      const roomId = `!room${(rooms += 1)}:${serverName}`;
      newRoom(roomId, creator, others, room.encrypted === true);
      const { position } = member(roomId, { id: botUserId, name: botDisplayName }, 'join', botUserId);
      await taken(position);
      return roomId;
    },
    membership: (roomId) => state.membership(roomId, botUserId),
    say,
    queue(roomId, from, content) {
      const { position: _position, ...delivered } = queue(roomId, from, content);
      return delivered;
    },
    async sayEncrypted(roomId, from) {
      const { event, position } = state.append(roomId, {
        type: 'm.room.encrypted',
        sender: from.id,
        content: { algorithm: 'm.megolm.v1.aes-sha2', ciphertext: 'AwgAEnACgAkLmt6qF84IK++J7UDH2Za1YVchHyprqTqsg', device_id: 'PHONE', sender_key: 'IlRMeOPX2e0MurIyfWEucYBRVOEEUMrOHqn/8mLqMjA', session_id: 'X3lUlvLELLYxeTx4yOVu6UDpasGEVO0Jbu+QFnm0cKQ' },
      });
      await taken(position);
      return { chatId: roomId, messageId: event.event_id, deliveryId: event.event_id };
    },
    react,
    dropSyncs: () => server.dropSyncs(),
    dropNextSync: () => server.dropNextSync(),
    edits: () => edits.map((edit) => ({ ...edit })),
    botEvents: () => botEvents.map((event) => structuredClone(event)),
    requests: () => server.requests(),
    unknownRequests: () => server.unknown(),
    async close() {
      await Promise.allSettled(adapters.map((made) => made.stop()));
      await server.close();
    },
  };
  return fake;
}
