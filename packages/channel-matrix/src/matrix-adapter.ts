// First: routes the SDK's global logger before the SDK's modules load (see sdk-logs.ts).
import './sdk-logs.js';
import { ChannelError, retryRateLimited, type ChannelAdapter, type ChannelTarget } from '@roster/channels';
import type { ChannelLogger } from '@roster/contracts';
import { ClientEvent, createClient, MemoryStore, Method, Preset, SyncState, Visibility, type MatrixClient } from 'matrix-js-sdk';
import { safeError, toChannelError } from './matrix-errors.js';
import { createReceiver, type Receiver } from './matrix-receiver.js';
import { approvalField, approvalInstructions, approveKey, editContent, matrixChannel, matrixTextLimit, rejectKey, userIdPattern } from './matrix-text.js';
import { clientLogger, routeSdkLogs } from './sdk-logs.js';

export interface MatrixAdapterOptions {
  /** The homeserver's client-server API base address (`https://matrix.example.org`, MATRIX_HOMESERVER_URL). */
  homeserverUrl: string;
  /** The bot account's access token (MATRIX_ACCESS_TOKEN). Never logged. */
  accessToken: string;
  /** The bot account's name in Roster's bindings (default `default`). */
  account?: string;
  /**
   * Who may invite the bot to a group room: user ids, `*:server` for
   * everyone on a server, or `*` (MATRIX_ROOM_INVITERS). Direct chats are
   * joined from anyone. Default: none, so group invitations are declined.
   */
  roomInviters?: readonly string[];
  logger?: ChannelLogger;
  /**
   * Messages that arrived at most this long before a start are answered
   * (the first sync replays each room's last events; the core stores each
   * event id once, so what was answered is not answered again). Default 10 minutes.
   */
  catchUpMs?: number;
}

/** The Matrix adapter: the contract, plus who the bot is once started. */
export interface MatrixAdapter extends ChannelAdapter {
  /** The bot's user id from `/account/whoami`, once started; null before. */
  readonly userId: string | null;
}

/** How long a typing notice lasts: a little more than the shared code's refresh (4 s), so it ends soon after the answer. */
const typingTimeoutMs = 6000;
/** The most events of each room the first sync brings. */
const initialSyncLimit = 20;

/** The homeserver's base address, as the SDK takes it (no trailing slash). */
function homeserverBase(url: string): string {
  return url.replace(/\/+$/, '');
}

/** `/account/whoami` within `timeoutMs`: who the token is. */
async function whoami(client: MatrixClient, timeoutMs: number): Promise<{ user_id: string; device_id?: string; is_guest?: boolean }> {
  // The SDK's request options pick `priority` from the DOM's RequestInit, which Node's types lack: the cast says no more than that.
  const requestOptions = { localTimeoutMs: timeoutMs } as Parameters<MatrixClient['http']['authedRequest']>[4];
  return client.http.authedRequest(Method.Get, '/account/whoami', undefined, undefined, requestOptions);
}

/**
 * The Matrix adapter, on matrix-js-sdk's sync loop (long-polling `/sync`,
 * resumed from its `since` token when the connection drops, no end-to-end
 * encryption loaded). A room with the bot and one person is a direct chat;
 * any other room is a group, where a message is for the bot when it mentions
 * it, replies to it, or is a command (`!agents`, or `/agents`). Approvals are
 * messages with 👍/👎 reactions (a reply "approve"/"reject" works too).
 * Sends go through the SDK's HTTP client with transaction ids of their own,
 * so that a 429 (`M_LIMIT_EXCEEDED`) reaches the shared retry as a
 * `ChannelError` with the wait the homeserver asked for.
 */
export function createMatrixAdapter(options: MatrixAdapterOptions): MatrixAdapter {
  const account = options.account ?? 'default';
  const log = options.logger?.child({ component: 'gateway/matrix', account });
  const baseUrl = homeserverBase(options.homeserverUrl);
  let client: MatrixClient | undefined;
  let receiver: Receiver | undefined;
  let me: string | null = null;
  let transactions = 0;
  /** The bot's own recent event ids: a reply to one is a reply to the bot. */
  const sent = new Set<string>();
  /** The direct chat found or made for each person the bot writes to by handle (an approval's owner). */
  const directRooms = new Map<string, string>();

  /** A transaction id: the homeserver takes one event per id, so each send has its own. */
  const nextTransaction = (): string => `roster.${Date.now().toString(36)}.${(transactions += 1)}`;

  const running = (): MatrixClient => {
    if (client === undefined || me === null) throw new ChannelError('failed', 'The Matrix adapter is not started.', { retryable: true });
    return client;
  };

  /** Put one event in a room, under a transaction id of its own. */
  async function put(roomId: string, type: string, content: Record<string, unknown>, what: string): Promise<string> {
    const matrix = running();
    const path = `/rooms/${encodeURIComponent(roomId)}/send/${encodeURIComponent(type)}/${encodeURIComponent(nextTransaction())}`;
    let eventId: string;
    try {
      ({ event_id: eventId } = await matrix.http.authedRequest<{ event_id: string }>(Method.Put, path, undefined, content));
    } catch (error) {
      throw toChannelError(what, error);
    }
    sent.add(eventId);
    if (sent.size > 5000) sent.delete(sent.values().next().value!);
    return eventId;
  }

  /** The adapter's own messages (a notice, a press's answer): 429s waited out here, as the shared code does for answers. */
  const sendWaiting = (roomId: string, type: string, content: Record<string, unknown>, what: string): Promise<string> =>
    retryRateLimited(() => put(roomId, type, content, what), { onWait: (waitMs) => log?.warn({ waitMs }, 'the homeserver asked to wait before sending again') });

  /**
   * The room a target names: a room id as it is, or for a person's handle
   * (an approval pushed to an owner) the direct chat with them: one the bot
   * is in with them alone, else a new one they are invited to.
   */
  async function roomFor(target: ChannelTarget): Promise<string> {
    const matrix = running();
    const chatId = target.chatId;
    if (chatId.startsWith('!')) {
      // A person who left the direct chat is gone from it: the message would reach an empty room.
      const member = target.recipient === undefined ? null : (matrix.getRoom(chatId)?.getMember(target.recipient) ?? null);
      if (member !== null && (member.membership === 'leave' || member.membership === 'ban')) {
        throw new ChannelError('unreachable', 'The person left this Matrix direct chat.');
      }
      return chatId;
    }
    if (!userIdPattern.test(chatId)) throw new ChannelError('failed', `Not a Matrix room or user id: ${JSON.stringify(chatId)}.`, { retryable: false });
    const inRoom = (roomId: string): boolean => {
      const room = matrix.getRoom(roomId);
      if (room === null) return true; // made a moment ago; the sync has not brought it yet
      const people = room.getMembers().filter((member) => member.membership === 'join' || member.membership === 'invite');
      return room.getMyMembership() === 'join' && people.length === 2 && people.some((member) => member.userId === chatId);
    };
    const cached = directRooms.get(chatId);
    if (cached !== undefined && inRoom(cached)) return cached;
    const found = matrix
      .getRooms()
      .filter((room) => inRoom(room.roomId))
      .sort((a, b) => b.getLastActiveTimestamp() - a.getLastActiveTimestamp())[0];
    if (found !== undefined) {
      directRooms.set(chatId, found.roomId);
      return found.roomId;
    }
    try {
      const { room_id: roomId } = await matrix.createRoom({ is_direct: true, invite: [chatId], preset: Preset.TrustedPrivateChat, visibility: Visibility.Private });
      directRooms.set(chatId, roomId);
      log?.info({ room: roomId }, 'opened a direct chat to reach a person');
      return roomId;
    } catch (error) {
      throw toChannelError('createRoom', error);
    }
  }

  function mentionsFor(target: ChannelTarget): { user_ids: string[] } {
    const person = target.replyTo === undefined ? undefined : receiver?.senderOf(target.replyTo);
    return { user_ids: person === undefined ? [] : [person] };
  }

  /** Where a message goes in its room: under the message it answers, in its thread. */
  function relation(target: ChannelTarget): Record<string, unknown> | undefined {
    if (target.threadId !== undefined) {
      return { rel_type: 'm.thread', event_id: target.threadId, is_falling_back: target.replyTo === undefined, 'm.in_reply_to': { event_id: target.replyTo ?? target.threadId } };
    }
    return target.replyTo === undefined ? undefined : { 'm.in_reply_to': { event_id: target.replyTo } };
  }

  function messageContent(target: ChannelTarget, body: string): Record<string, unknown> {
    const related = relation(target);
    return { msgtype: 'm.text', body, 'm.mentions': mentionsFor(target), ...(related === undefined ? {} : { 'm.relates_to': related }) };
  }

  return {
    channel: matrixChannel,
    account,
    get userId() {
      return me;
    },
    capabilities: { threads: false, buttons: false, media: true, typing: true, textLimit: matrixTextLimit, commandPrefix: '!' },

    async start(start) {
      routeSdkLogs(log);
      const probe = createClient({ baseUrl, accessToken: options.accessToken, logger: clientLogger() });
      let identity: Awaited<ReturnType<typeof whoami>>;
      try {
        identity = await whoami(probe, 15_000);
      } catch (error) {
        throw toChannelError('whoami', error);
      }
      if (identity.is_guest === true) throw new ChannelError('failed', 'MATRIX_ACCESS_TOKEN is a guest’s: use the access token of a registered bot account.');
      const userId = identity.user_id;
      const displayName = await probe.getProfileInfo(userId, 'displayname').then(
        (profile) => profile.displayname ?? null,
        () => null,
      );
      const matrix = createClient({
        baseUrl,
        accessToken: options.accessToken,
        userId,
        ...(identity.device_id === undefined ? {} : { deviceId: identity.device_id }),
        store: new MemoryStore(),
        logger: clientLogger(),
      });
      client = matrix;
      me = userId;
      receiver = createReceiver({
        client: matrix,
        userId,
        displayName,
        account,
        accessToken: options.accessToken,
        roomInviters: options.roomInviters ?? [],
        catchUpMs: options.catchUpMs ?? 10 * 60_000,
        start,
        log,
        send: sendWaiting,
        redact: async (roomId, eventId) => {
          const path = `/rooms/${encodeURIComponent(roomId)}/redact/${encodeURIComponent(eventId)}/${encodeURIComponent(nextTransaction())}`;
          try {
            await matrix.http.authedRequest(Method.Put, path, undefined, {});
          } catch (error) {
            throw toChannelError('redact', error);
          }
        },
        sentByBot: (eventId) => sent.has(eventId),
      });
      const events = receiver;
      matrix.on(ClientEvent.Event, (event) => {
        try {
          events.receive(event);
        } catch (error) {
          log?.error({ err: safeError(error) }, 'a Matrix event could not be handled');
        }
      });
      let syncing = false;
      const ready = new Promise<void>((resolve, reject) => {
        matrix.on(ClientEvent.Sync, (state, _previous, data) => {
          if (state === SyncState.Prepared) {
            events.prepared();
            resolve();
          }
          if (state === SyncState.Syncing && !syncing) {
            if (data?.oldSyncToken !== undefined) log?.info('the sync with the homeserver resumed');
            syncing = true;
          }
          if ((state === SyncState.Reconnecting || state === SyncState.Error) && syncing) {
            syncing = false;
            log?.warn({ err: safeError(data?.error) }, 'the sync with the homeserver dropped; the SDK tries again from where it was');
          }
          if (state === SyncState.Error) reject(toChannelError('sync', data?.error));
        });
      });
      // Settled before it is awaited when the first sync fails at once: handled below, never unhandled.
      ready.catch(() => undefined);
      await matrix.startClient({ initialSyncLimit, lazyLoadMembers: false, disablePresence: true, threadSupport: false });
      try {
        await ready;
      } catch (error) {
        matrix.stopClient();
        throw error;
      }
      log?.info({ bot: userId }, 'Matrix bot receiving (/sync long polling)');
    },

    async stop() {
      client?.stopClient();
      client?.removeAllListeners();
    },

    async sendText(target, text) {
      const roomId = await roomFor(target);
      return { id: await put(roomId, 'm.room.message', messageContent(target, text), 'send') };
    },

    async editText(target, messageId, text) {
      const roomId = await roomFor(target);
      await put(roomId, 'm.room.message', editContent(messageId, text), 'edit');
    },

    async sendApproval(target, approval) {
      const roomId = await roomFor(target);
      const body = `${approval.text}${approvalInstructions}`;
      const eventId = await put(roomId, 'm.room.message', { msgtype: 'm.text', body, 'm.mentions': {}, [approvalField]: { id: approval.id, approve: approveKey, reject: rejectKey } }, 'send');
      const message = { eventId, approvalId: approval.id, text: approval.text, reactions: [] as string[] };
      receiver?.rememberApproval(message);
      // One tap for the owner: the bot's own reactions, which a person adds to by tapping them.
      for (const key of [approveKey, rejectKey]) {
        try {
          message.reactions.push(await sendWaiting(roomId, 'm.reaction', { 'm.relates_to': { rel_type: 'm.annotation', event_id: eventId, key } }, 'reaction'));
        } catch (error) {
          log?.debug({ err: safeError(error) }, 'a reaction could not be offered on an approval; the owner can still react or reply');
        }
      }
      return { id: eventId };
    },

    async sendTyping(target) {
      const roomId = await roomFor(target);
      try {
        await running().sendTyping(roomId, true, typingTimeoutMs);
      } catch (error) {
        throw toChannelError('typing', error);
      }
    },
  };
}

/**
 * Whether the homeserver takes this token: `/account/whoami` within
 * `timeoutMs` (default 5 s). Says who the bot is, or why not in words an
 * operator can act on.
 */
export async function checkMatrixAccount(options: { homeserverUrl: string; accessToken: string; timeoutMs?: number }): Promise<{ ok: boolean; detail: string }> {
  const baseUrl = homeserverBase(options.homeserverUrl);
  routeSdkLogs(undefined);
  const client = createClient({ baseUrl, accessToken: options.accessToken, logger: clientLogger() });
  try {
    const identity = await whoami(client, options.timeoutMs ?? 5000);
    if (identity.is_guest === true) return { ok: false, detail: `the access token is a guest’s at ${baseUrl}: use a registered bot account’s token` };
    return { ok: true, detail: `signed in as ${identity.user_id}${identity.device_id === undefined ? '' : ` (device ${identity.device_id})`} at ${baseUrl}` };
  } catch (error) {
    const status = (error as { httpStatus?: unknown }).httpStatus;
    if (status === 404 || status === 405) {
      return { ok: false, detail: `${baseUrl} does not answer like a Matrix homeserver (${status} for /account/whoami): MATRIX_HOMESERVER_URL is the client-server API's base address, such as https://matrix.example.org` };
    }
    const failure = toChannelError('whoami', error);
    return { ok: false, detail: failure.message.replace('could not be reached', `at ${baseUrl} could not be reached`) };
  }
}
