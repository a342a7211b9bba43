/**
 * The state and `/sync` of a fake Matrix homeserver: rooms with their state
 * and timelines, one stream position across them, and the sync response the
 * one client (the bot) gets for a `since` token, as Synapse shapes it (a
 * newly joined room brings its state, an invitation its stripped state, a
 * filter's timeline limit cuts a room's events and marks it limited).
 * Test-only: `fake-matrix.ts` serves it over HTTP.
 */

/** An event as the homeserver keeps it. */
export interface FakeEvent {
  event_id: string;
  room_id: string;
  type: string;
  sender: string;
  content: Record<string, unknown>;
  origin_server_ts: number;
  state_key?: string;
  unsigned?: Record<string, unknown>;
}

export interface FakeRoom {
  id: string;
  /** The current state, by type and state key. */
  state: Map<string, FakeEvent>;
  /** Every event, with its place in the stream. */
  timeline: Array<{ position: number; event: FakeEvent }>;
}

export interface SyncBody {
  next_batch: string;
  rooms: { join: Record<string, unknown>; invite: Record<string, unknown>; leave: Record<string, unknown> };
  account_data: { events: unknown[] };
  presence: { events: unknown[] };
  to_device: { events: unknown[] };
}

const stateKey = (type: string, key: string): string => `${type}\u0000${key}`;

/** The rooms, their events and the stream of one homeserver; `botUserId` is the client it syncs for. */
export function createHomeserverState(options: { serverName: string; botUserId: string }) {
  const rooms = new Map<string, FakeRoom>();
  const byId = new Map<string, FakeEvent>();
  let position = 0;
  let nextEvent = 0;
  const listeners = new Set<() => void>();

  function room(roomId: string): FakeRoom {
    let found = rooms.get(roomId);
    if (found === undefined) {
      found = { id: roomId, state: new Map(), timeline: [] };
      rooms.set(roomId, found);
    }
    return found;
  }

  /** Add an event to a room's timeline (and its state, for a state event); resolves its place in the stream. */
  function append(roomId: string, event: Omit<FakeEvent, 'event_id' | 'room_id' | 'origin_server_ts'> & { event_id?: string }): { event: FakeEvent; position: number } {
    const target = room(roomId);
    const full: FakeEvent = { ...event, event_id: event.event_id ?? `$e${(nextEvent += 1)}-${Math.random().toString(36).slice(2, 10)}`, room_id: roomId, origin_server_ts: Date.now() };
    position += 1;
    target.timeline.push({ position, event: full });
    if (full.state_key !== undefined) target.state.set(stateKey(full.type, full.state_key), full);
    byId.set(full.event_id, full);
    for (const listener of listeners) listener();
    return { event: full, position };
  }

  /** The same event again, later in the stream: what a homeserver's replay after a lost `since` looks like to a client. */
  function replay(eventId: string): number {
    const event = byId.get(eventId);
    if (event === undefined) throw new Error(`no event ${eventId}`);
    position += 1;
    room(event.room_id).timeline.push({ position, event });
    for (const listener of listeners) listener();
    return position;
  }

  function membership(roomId: string, userId: string): string | undefined {
    return rooms.get(roomId)?.state.get(stateKey('m.room.member', userId))?.content.membership as string | undefined;
  }

  function members(roomId: string, ...memberships: string[]): string[] {
    return [...(rooms.get(roomId)?.state.values() ?? [])]
      .filter((event) => event.type === 'm.room.member' && memberships.includes(String(event.content.membership)))
      .map((event) => event.state_key!);
  }

  const clientEvent = (event: FakeEvent) => {
    const { room_id: _roomId, ...rest } = event;
    return { ...rest, unsigned: { ...(event.unsigned ?? {}), age: Math.max(Date.now() - event.origin_server_ts, 0) } };
  };
  const stripped = (event: FakeEvent) => ({ type: event.type, state_key: event.state_key, sender: event.sender, content: event.content });
  const isBotMember = (event: FakeEvent, value?: string) => event.type === 'm.room.member' && event.state_key === options.botUserId && (value === undefined || event.content.membership === value);

  /**
   * The sync response for `since` (null: an initial sync), with at most
   * `limit` timeline events a room. `news` says whether it brings anything
   * (an incremental sync without news is held open by the server).
   */
  function sync(since: number | null, limit: number | undefined): { body: SyncBody; news: boolean } {
    const body: SyncBody = {
      next_batch: `s${position}`,
      rooms: { join: {}, invite: {}, leave: {} },
      account_data: { events: [] },
      presence: { events: [] },
      to_device: { events: [] },
    };
    for (const current of rooms.values()) {
      const bot = membership(current.id, options.botUserId);
      const fresh = since === null ? current.timeline : current.timeline.filter((entry) => entry.position > since);
      if (bot === 'invite') {
        if (since === null || fresh.some((entry) => isBotMember(entry.event, 'invite'))) {
          body.rooms.invite[current.id] = { invite_state: { events: [...current.state.values()].map(stripped) } };
        }
        continue;
      }
      if (bot === 'join') {
        if (since !== null && fresh.length === 0) continue;
        const cut = limit !== undefined && fresh.length > limit;
        const window = cut ? fresh.slice(-limit) : fresh;
        const inWindow = new Set(window.map((entry) => entry.event.event_id));
        // An initial sync, a room joined since, or a gap: the state the timeline starts from comes along.
        const withState = since === null || cut || window.some((entry) => isBotMember(entry.event, 'join'));
        body.rooms.join[current.id] = {
          timeline: { events: window.map((entry) => clientEvent(entry.event)), limited: cut, prev_batch: `p${(window[0]?.position ?? position) - 1}` },
          state: { events: withState ? [...current.state.values()].filter((event) => !inWindow.has(event.event_id)).map(clientEvent) : [] },
          ephemeral: { events: [] },
          account_data: { events: [] },
          unread_notifications: { notification_count: 0, highlight_count: 0 },
        };
        continue;
      }
      if (since === null || bot === undefined) continue;
      const left = fresh.findIndex((entry) => isBotMember(entry.event) && entry.event.content.membership !== 'join' && entry.event.content.membership !== 'invite');
      if (left >= 0) body.rooms.leave[current.id] = { timeline: { events: fresh.slice(0, left + 1).map((entry) => clientEvent(entry.event)), limited: false }, state: { events: [] } };
    }
    const news = Object.keys(body.rooms.join).length + Object.keys(body.rooms.invite).length + Object.keys(body.rooms.leave).length > 0;
    return { body, news };
  }

  return {
    serverName: options.serverName,
    rooms,
    room,
    append,
    replay,
    membership,
    members,
    sync,
    clientEvent,
    event: (eventId: string) => byId.get(eventId),
    get position() {
      return position;
    },
    /** Called after every new event (a held sync answers then). */
    onAppend(listener: () => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

export type HomeserverState = ReturnType<typeof createHomeserverState>;
