/**
 * The HTTP side of a fake Matrix homeserver: a local node:http server that
 * answers the client-server API endpoints matrix-js-sdk 37 calls (found by
 * running the SDK against it and answering what it asked): versions,
 * whoami, profile, push rules, capabilities, filters, `/sync` (long-polled
 * with `timeout`, resumed with `since`), send, redact, typing, join, leave,
 * createRoom, a room's event and members, account data and media
 * downloads. Anything else is answered 404 `M_UNRECOGNIZED` and recorded in
 * `unknown`, so that a test sees what the SDK asked for. Test-only.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FakeEvent, HomeserverState } from './fake-homeserver.js';

/** An answer the façade may give instead of the homeserver's own (a 429, a 403). */
export interface Refusal {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface FakeServerOptions {
  state: HomeserverState;
  accessToken: string;
  botUserId: string;
  botDisplayName: string;
  /** Files people sent, by media id. */
  media: Map<string, { data: Uint8Array; mediaType: string }>;
  /** Before the bot's event is put in a room: a refusal, or null to accept it. */
  refuse(roomId: string, type: string, content: Record<string, unknown>): Refusal | null;
  /** The bot's typing notice in a room: a refusal, or null. */
  typing(roomId: string, typing: boolean): Refusal | null;
  /** After the bot's event is in a room. */
  sentByBot(event: FakeEvent): void;
}

const matrixError = (status: number, errcode: string, error: string): Refusal => ({ status, body: { errcode, error } });

/** Start the HTTP server of a fake homeserver on a free local port. */
export async function startFakeServer(options: FakeServerOptions) {
  const { state, botUserId } = options;
  /** Every request, its path decoded (`/rooms/!room:server/…`). */
  const requests: string[] = [];
  const unknown: string[] = [];
  const filters = new Map<string, unknown>();
  const transactions = new Map<string, string>();
  const accountData = new Map<string, unknown>();
  const held = new Set<ServerResponse>();
  const taken: Array<{ position: number; resolve: () => void }> = [];
  let dropNext = false;
  let nextRoom = 0;

  /** The bot came back for events after `since`: everything up to it was taken in. */
  function markTaken(since: number): void {
    for (let index = taken.length - 1; index >= 0; index -= 1) {
      if (taken[index]!.position > since) continue;
      taken[index]!.resolve();
      taken.splice(index, 1);
    }
  }

  function timelineLimit(filter: string | null): number | undefined {
    if (filter === null) return undefined;
    const definition = (filter.startsWith('{') ? JSON.parse(filter) : filters.get(filter)) as { room?: { timeline?: { limit?: number } } } | undefined;
    return definition?.room?.timeline?.limit;
  }

  async function sync(query: URLSearchParams, response: ServerResponse): Promise<Refusal | null> {
    const sinceToken = query.get('since');
    const since = sinceToken === null ? null : Number(sinceToken.replace(/^s/, ''));
    if (since !== null) markTaken(since);
    const limit = timelineLimit(query.get('filter'));
    let result = state.sync(since, limit);
    const timeout = Math.min(Number(query.get('timeout') ?? 0), 30_000);
    if (since !== null && !result.news && timeout > 0) {
      // Long polling: held until something happens in a room of the bot's, or the timeout.
      held.add(response);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, timeout);
        const stop = state.onAppend(done);
        response.on('close', done);
        function done(): void {
          clearTimeout(timer);
          stop();
          resolve();
        }
      });
      held.delete(response);
      if (response.destroyed) return null;
      result = state.sync(since, limit);
    }
    if (dropNext && result.news) {
      // The connection breaks while the answer is on its way: the bot never gets it and must ask again.
      dropNext = false;
      response.socket?.destroy();
      return null;
    }
    return { status: 200, body: result.body };
  }

  /** The bot's membership changes: a join, a leave. */
  function member(roomId: string, membership: string): void {
    const current = state.membership(roomId, botUserId);
    if (current === membership) return;
    state.append(roomId, { type: 'm.room.member', sender: botUserId, state_key: botUserId, content: { membership, ...(membership === 'join' ? { displayname: options.botDisplayName } : {}) } });
  }

  async function answer(method: string, path: string[], query: URLSearchParams, body: Record<string, unknown>, response: ServerResponse): Promise<Refusal | null> {
    const ok = (value: unknown): Refusal => ({ status: 200, body: value });
    const [first, second, third, fourth, fifth] = path;
    if (method === 'GET' && first === 'account' && second === 'whoami') return ok({ user_id: botUserId, device_id: 'ROSTERFAKE', is_guest: false });
    if (method === 'GET' && first === 'profile') {
      if (second !== botUserId) return ok({});
      return ok(third === 'displayname' ? { displayname: options.botDisplayName } : { displayname: options.botDisplayName });
    }
    if (method === 'GET' && first === 'pushrules') return ok({ global: { override: [], underride: [], content: [], room: [], sender: [] } });
    if (method === 'GET' && first === 'capabilities') return ok({ capabilities: {} });
    if (first === 'user' && third === 'filter') {
      if (method === 'POST') {
        const id = String(filters.size + 1);
        filters.set(id, body);
        return ok({ filter_id: id });
      }
      const filter = filters.get(fourth ?? '');
      return filter === undefined ? matrixError(404, 'M_NOT_FOUND', 'No such filter') : ok(filter);
    }
    if (first === 'user' && third === 'account_data' && fourth !== undefined) {
      if (method === 'PUT') {
        accountData.set(fourth, body);
        return ok({});
      }
      return accountData.has(fourth) ? ok(accountData.get(fourth)) : matrixError(404, 'M_NOT_FOUND', 'Account data not found');
    }
    if (method === 'GET' && first === 'sync') return sync(query, response);
    if (method === 'POST' && first === 'join' && second !== undefined) return join(second);
    if (method === 'POST' && first === 'createRoom') {
      const roomId = `!made${(nextRoom += 1)}:${state.serverName}`;
      state.append(roomId, { type: 'm.room.create', sender: botUserId, state_key: '', content: { creator: botUserId, room_version: '10' } });
      member(roomId, 'join');
      for (const invited of Array.isArray(body.invite) ? (body.invite as string[]) : []) {
        state.append(roomId, { type: 'm.room.member', sender: botUserId, state_key: invited, content: { membership: 'invite', is_direct: body.is_direct === true } });
        // The fake's people take every invitation at once.
        state.append(roomId, { type: 'm.room.member', sender: invited, state_key: invited, content: { membership: 'join' } });
      }
      return ok({ room_id: roomId });
    }
    if (first === 'rooms' && second !== undefined) {
      const roomId = second;
      if (method === 'POST' && third === 'join') return join(roomId);
      if (method === 'POST' && third === 'leave') {
        if (state.membership(roomId, botUserId) === undefined) return matrixError(404, 'M_NOT_FOUND', 'Unknown room');
        member(roomId, 'leave');
        return ok({});
      }
      const joined = state.membership(roomId, botUserId) === 'join';
      if (method === 'PUT' && third === 'send' && fourth !== undefined && fifth !== undefined) {
        const key = `${roomId}/${fifth}`;
        const known = transactions.get(key);
        if (known !== undefined) return ok({ event_id: known });
        const refused = options.refuse(roomId, fourth, body);
        if (refused !== null) return refused;
        if (!joined) return matrixError(403, 'M_FORBIDDEN', `User ${botUserId} not in room ${roomId}`);
        const { event } = state.append(roomId, { type: fourth, sender: botUserId, content: body, unsigned: { transaction_id: fifth } });
        transactions.set(key, event.event_id);
        options.sentByBot(event);
        return ok({ event_id: event.event_id });
      }
      if (method === 'PUT' && third === 'redact' && fourth !== undefined) {
        if (!joined) return matrixError(403, 'M_FORBIDDEN', 'Not in room');
        const { event } = state.append(roomId, { type: 'm.room.redaction', sender: botUserId, content: { redacts: fourth }, unsigned: {} });
        options.sentByBot(event);
        return ok({ event_id: event.event_id });
      }
      if (method === 'PUT' && third === 'typing') {
        const refused = options.typing(roomId, body.typing === true);
        if (refused !== null) return refused;
        return joined ? ok({}) : matrixError(403, 'M_FORBIDDEN', 'Not in room');
      }
      if (method === 'GET' && third === 'event' && fourth !== undefined) {
        const event = state.event(fourth);
        return event === undefined || event.room_id !== roomId || !joined ? matrixError(404, 'M_NOT_FOUND', 'Event not found') : ok(state.clientEvent(event));
      }
      if (method === 'GET' && (third === 'members' || third === 'joined_members')) {
        const room = state.rooms.get(roomId);
        if (room === undefined || !joined) return matrixError(403, 'M_FORBIDDEN', 'Not in room');
        const events = [...room.state.values()].filter((event) => event.type === 'm.room.member');
        if (third === 'members') return ok({ chunk: events.map(state.clientEvent) });
        return ok({ joined: Object.fromEntries(events.filter((event) => event.content.membership === 'join').map((event) => [event.state_key, { display_name: event.content.displayname ?? null }])) });
      }
    }
    unknown.push(`${method} /${path.join('/')}`);
    return matrixError(404, 'M_UNRECOGNIZED', 'Unrecognized request');
  }

  function join(roomIdOrAlias: string): Refusal {
    const membership = state.membership(roomIdOrAlias, botUserId);
    if (membership === undefined) return matrixError(404, 'M_NOT_FOUND', 'No known servers');
    if (membership !== 'invite' && membership !== 'join') return matrixError(403, 'M_FORBIDDEN', 'You are not invited to this room.');
    member(roomIdOrAlias, 'join');
    return { status: 200, body: { room_id: roomIdOrAlias } };
  }

  function media(path: string[], response: ServerResponse): void {
    const file = options.media.get(path.at(-1) ?? '');
    if (file === undefined) {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ errcode: 'M_NOT_FOUND', error: 'Not found' }));
      return;
    }
    response.writeHead(200, { 'content-type': file.mediaType, 'content-length': String(file.data.byteLength) }).end(Buffer.from(file.data));
  }

  function authorized(request: IncomingMessage, query: URLSearchParams): boolean {
    const header = request.headers.authorization ?? '';
    return header === `Bearer ${options.accessToken}` || query.get('access_token') === options.accessToken;
  }

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://fake.invalid');
      const method = request.method ?? 'GET';
      requests.push(`${method} ${decodeURIComponent(url.pathname)}`);
      const reply = (refusal: Refusal | null) => {
        if (refusal === null || response.destroyed) return;
        response.writeHead(refusal.status, { 'content-type': 'application/json', ...(refusal.headers ?? {}) }).end(JSON.stringify(refusal.body));
      };
      if (url.pathname === '/_matrix/client/versions') {
        return reply({ status: 200, body: { versions: ['v1.1', 'v1.2', 'v1.3', 'v1.4', 'v1.5', 'v1.6', 'v1.7', 'v1.8', 'v1.9', 'v1.10', 'v1.11'], unstable_features: {} } });
      }
      const matched = /^\/_matrix\/(client\/(?:v3|r0|v1)|media\/v3)\/(.*)$/.exec(url.pathname);
      if (matched === null) {
        unknown.push(`${method} ${url.pathname}`);
        return reply(matrixError(404, 'M_UNRECOGNIZED', 'Unrecognized request'));
      }
      const path = matched[2]!.split('/').map((part) => decodeURIComponent(part));
      const isMedia = matched[1] === 'media/v3' || (matched[1] === 'client/v1' && path[0] === 'media');
      if (!authorized(request, url.searchParams) && !(isMedia && matched[1] === 'media/v3')) {
        return reply(matrixError(401, 'M_UNKNOWN_TOKEN', 'Invalid access token passed.'));
      }
      if (isMedia) return media(path, response);
      let body: Record<string, unknown> = {};
      try {
        const raw = Buffer.concat(chunks).toString('utf8');
        body = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
      } catch {
        return reply(matrixError(400, 'M_NOT_JSON', 'Content not JSON.'));
      }
      answer(method, path, url.searchParams, body, response).then(reply, () => reply(matrixError(500, 'M_UNKNOWN', 'Internal server error')));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Every request, as `METHOD /path`, in order. */
    requests: () => [...requests],
    /** The requests no endpoint answered. */
    unknown: () => [...unknown],
    /** Resolves once the bot has synced past `position` (it came back for what follows). */
    taken(position: number): Promise<void> {
      return new Promise((resolve) => taken.push({ position, resolve }));
    },
    /** Break every held sync connection now. */
    dropSyncs(): number {
      const count = held.size;
      for (const response of held) response.socket?.destroy();
      return count;
    },
    /** Break the next sync connection that has news, instead of answering it. */
    dropNextSync(): void {
      dropNext = true;
    },
    async close(): Promise<void> {
      for (const entry of taken.splice(0)) entry.resolve();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
