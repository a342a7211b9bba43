/**
 * The fake Discord's WebSocket gateway, for tests: HELLO, IDENTIFY (with its
 * shard) → READY and a GUILD_CREATE for each server of that shard,
 * heartbeats acknowledged, events dispatched to the session of the shard
 * that owns their server (Discord's rule, `(guild_id >> 22) % num_shards`;
 * direct messages to shard 0). A second IDENTIFY for a shard a session
 * already holds is refused as Discord refuses a shard it will not hand out,
 * closed with 4010 (Invalid shard): two processes on one shard would be
 * seen. A client whose connection dropped with any code but 1000 or 1001
 * may RESUME its session, as on Discord: the events it missed are sent again,
 * then RESUMED. Test-only: excluded from the build.
 */
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import { intents, shardOf, type World } from './fake-discord-world.js';

interface Connection {
  socket: WebSocket;
  identified: boolean;
  intents: number;
  /** The shard it identified for: [id, count]. */
  shard: [number, number];
  sequence: number;
  /** Heartbeats the client sent, by their sequence, for whoever waits. */
  heartbeats: Set<(sequence: number | null) => void>;
  /** The session it holds (from READY), and the events dispatched in it, for a RESUME to send again. */
  sessionId: string | null;
  sent: Array<{ sequence: number; text: string }>;
  /** How its socket closed (null while open). */
  closedWith: number | null;
}

/** Whether a connection's close ended its session, as closing with 1000 or 1001 does on Discord; any other drop may be resumed. */
const ended = (connection: Connection) => connection.closedWith === 1000 || connection.closedWith === 1001;

/** The gateway on `server`'s port (upgraded to a WebSocket), over `world`. */
export function startGateway(server: http.Server, world: World, gatewayUrl: () => string) {
  const connections = new Set<Connection>();
  const refusals: Array<[number, number]> = [];
  let lastIntents: number | null = null;
  let sessions = 0;
  /** Each session's connection now, by the session's id; and whoever waits for a connection to close or a session to resume. */
  const resumable = new Map<string, Connection>();
  const closeWaiters = new Set<() => void>();
  // A session whose socket is closing (its client left) no longer holds its shard.
  const identified = () => [...connections].filter((connection) => connection.identified && connection.socket.readyState === connection.socket.OPEN);

  const gateway = new WebSocketServer({ server });
  gateway.on('connection', (socket) => {
    const connection: Connection = { socket, identified: false, intents: 0, shard: [0, 1], sequence: 0, heartbeats: new Set(), sessionId: null, sent: [], closedWith: null };
    connections.add(connection);
    socket.on('close', (code) => {
      connection.closedWith = code;
      connections.delete(connection);
      for (const wake of closeWaiters) wake();
    });
    socket.send(JSON.stringify({ op: 10, d: { heartbeat_interval: 41_250 }, s: null, t: null }));
    socket.on('message', (data) => {
      let payload: { op?: number; d?: unknown };
      try {
        payload = JSON.parse(String(data)) as { op?: number; d?: unknown };
      } catch {
        socket.close(4002, 'Error while decoding payload.');
        return;
      }
      switch (payload.op) {
        case 1: {
          socket.send(JSON.stringify({ op: 11, d: null, s: null, t: null }));
          for (const waiter of connection.heartbeats) waiter(typeof payload.d === 'number' ? payload.d : null);
          return;
        }
        case 2:
          identify(connection, payload.d as { token?: string; intents?: number; shard?: unknown });
          return;
        case 6:
          resume(connection, payload.d as { token?: string; session_id?: string; seq?: number });
          return;
        default:
          return;
      }
    });
  });

  function identify(connection: Connection, identify: { token?: string; intents?: number; shard?: unknown }): void {
    const { socket } = connection;
    if (identify.token !== world.token && identify.token !== `Bot ${world.token}`) {
      socket.close(4004, 'Authentication failed.');
      return;
    }
    if (world.options.messageContentOff && (Number(identify.intents ?? 0) & intents.messageContent) !== 0) {
      socket.close(4014, 'Disallowed intent(s).');
      return;
    }
    const shard = Array.isArray(identify.shard) ? [Number(identify.shard[0]), Number(identify.shard[1])] : [0, 1];
    const [id, count] = shard as [number, number];
    if (!Number.isInteger(count) || count < 1 || !Number.isInteger(id) || id < 0 || id >= count) {
      socket.close(4010, 'Invalid shard.');
      return;
    }
    // One session per shard: a second one for a shard already connected is refused.
    if (identified().some((other) => other.shard[0] === id && other.shard[1] === count)) {
      refusals.push([id, count]);
      socket.close(4010, 'Invalid shard.');
      return;
    }
    connection.identified = true;
    connection.intents = Number(identify.intents ?? 0);
    connection.shard = [id, count];
    lastIntents = connection.intents;
    sessions += 1;
    connection.sessionId = randomBytes(16).toString('hex');
    resumable.set(connection.sessionId, connection);
    const owned = world.guilds.filter((guild) => shardOf(guild.id, count) === id);
    dispatch(connection, 'READY', {
      v: 10,
      user: world.botUser,
      guilds: owned.map((guild) => ({ id: guild.id, unavailable: true })),
      session_id: connection.sessionId,
      resume_gateway_url: gatewayUrl(),
      shard: [id, count],
      application: { id: world.applicationId, flags: 0 },
      private_channels: [],
      relationships: [],
      presences: [],
      guild_join_requests: [],
      user_settings: {},
      geo_ordered_rtc_regions: [],
    });
    if ((connection.intents & intents.guilds) !== 0) for (const guild of owned) dispatch(connection, 'GUILD_CREATE', world.guildPayload(guild));
  }

  function dispatch(connection: Connection, type: string, data: Record<string, unknown>): number {
    connection.sequence += 1;
    const text = JSON.stringify({ op: 0, t: type, s: connection.sequence, d: data });
    connection.sent.push({ sequence: connection.sequence, text });
    connection.socket.send(text);
    return connection.sequence;
  }

  /**
   * RESUME: a session whose connection dropped (not closed with 1000 or 1001,
   * which end it on Discord) continues on this one: the events after the
   * client's sequence again, then RESUMED. Else the session is invalid (op 9)
   * and the client identifies anew.
   */
  function resume(connection: Connection, request: { token?: string; session_id?: string; seq?: number }): void {
    if (request.token !== world.token && request.token !== `Bot ${world.token}`) {
      connection.socket.close(4004, 'Authentication failed.');
      return;
    }
    const old = resumable.get(String(request.session_id));
    const taken = old !== undefined && identified().some((other) => other !== old && other.shard[0] === old.shard[0] && other.shard[1] === old.shard[1]);
    if (old === undefined || ended(old) || taken || old.socket.readyState === old.socket.OPEN) {
      connection.socket.send(JSON.stringify({ op: 9, d: false, s: null, t: null }));
      return;
    }
    Object.assign(connection, { identified: true, intents: old.intents, shard: old.shard, sequence: old.sequence, sessionId: old.sessionId, sent: old.sent });
    resumable.set(old.sessionId!, connection);
    for (const event of old.sent) if (event.sequence > Number(request.seq ?? 0)) connection.socket.send(event.text);
    dispatch(connection, 'RESUMED', {});
    for (const wake of closeWaiters) wake();
  }

  /**
   * The session a server's events go to (null: a direct message, shard 0): the
   * newest identified connection of the shard that owns it, else a session of
   * that shard whose connection dropped and may still be resumed (Discord
   * keeps its events for the resume).
   */
  function sessionFor(guildId: string | null): Connection {
    const owns = (connection: Connection) => connection.shard[0] === (guildId === null ? 0 : shardOf(guildId, connection.shard[1]));
    const dropped = [...resumable.values()].filter((connection) => connection.closedWith !== null && !ended(connection));
    const session = identified().filter(owns).at(-1) ?? dropped.filter(owns).at(-1);
    if (session === undefined) throw new Error(`no bot session of the fake Discord gateway receives ${guildId === null ? 'direct messages' : `server ${guildId}`}`);
    return session;
  }

  /**
   * Resolve once the client has handled the event with this sequence: ask it
   * for a heartbeat (op 1) until the sequence it reports reaches it. The
   * client handles gateway messages in order, so that event was handed on.
   * It waits on the client, not on a clock (a busy machine's client answers
   * late, and the caller's own timeout bounds the wait). A session whose
   * connection dropped is followed to the connection that resumes it (the
   * event is sent again there); it fails at once if the session ended first
   * (closed with 1000 or 1001), since that client will never take the event.
   */
  async function handled(session: Connection, sequence: number): Promise<void> {
    for (;;) {
      const connection = resumable.get(session.sessionId!)!;
      if (ended(connection)) throw new Error(`the bot's session ended before it took gateway event ${sequence}`);
      if (connection.socket.readyState !== connection.socket.OPEN) {
        // Dropped: wait for the client to resume, or for the session to end.
        await new Promise<void>((resolve) => {
          const wake = () => {
            closeWaiters.delete(wake);
            resolve();
          };
          closeWaiters.add(wake);
        });
        continue;
      }
      const reported = await new Promise<number | null>((resolve) => {
        const timer = setTimeout(() => done(null), 200);
        const done = (value: number | null) => {
          clearTimeout(timer);
          connection.heartbeats.delete(done);
          resolve(value);
        };
        connection.heartbeats.add(done);
        connection.socket.send(JSON.stringify({ op: 1, d: null, s: null, t: null }));
      });
      if (reported !== null && reported >= sequence) return;
    }
  }

  return {
    /** Send an event of a server (null: a direct message) to the bot as the gateway would, unless its intents keep it away; resolves once handled. */
    async send(type: string, data: Record<string, unknown>, needs: number, guildId: string | null): Promise<void> {
      const connection = sessionFor(guildId);
      if ((connection.intents & needs) !== needs) return;
      await handled(connection, dispatch(connection, type, data));
    },
    /** The intents of the session that receives this server's events (null: direct messages), or null when none does. */
    intentsFor(guildId: string | null): number | null {
      try {
        return sessionFor(guildId).intents;
      } catch {
        return null;
      }
    },
    lastIntents: () => lastIntents,
    sessions: () => sessions,
    connected: () => identified().length,
    /** The shards connected now, as `id/count`, sorted. */
    shards: () => identified().map((connection) => `${connection.shard[0]}/${connection.shard[1]}`).sort(),
    /** The IDENTIFYs refused because their shard was connected already, as `id/count`. */
    refusals: () => refusals.map(([id, count]) => `${id}/${count}`),
    /** Drop the connection of the session that receives direct messages, as a network fault does (no close frame); resolves once it is closed. */
    async drop(): Promise<void> {
      const connection = sessionFor(null);
      const closed = new Promise<void>((resolve) => connection.socket.once('close', () => resolve()));
      connection.socket.terminate();
      await closed;
    },
    close(): void {
      for (const connection of connections) connection.socket.terminate();
      gateway.close();
    },
  };
}
