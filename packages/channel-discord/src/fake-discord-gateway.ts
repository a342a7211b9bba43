/**
 * The fake Discord's WebSocket gateway, for tests: HELLO, IDENTIFY (with its
 * shard) → READY and a GUILD_CREATE for each server of that shard,
 * heartbeats acknowledged, events dispatched to the session of the shard
 * that owns their server (Discord's rule, `(guild_id >> 22) % num_shards`;
 * direct messages to shard 0). A second IDENTIFY for a shard a session
 * already holds is refused as Discord refuses a shard it will not hand out,
 * closed with 4010 (Invalid shard): two processes on one shard would be
 * seen. Test-only: excluded from the build.
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
}

/** The gateway on `server`'s port (upgraded to a WebSocket), over `world`. */
export function startGateway(server: http.Server, world: World, gatewayUrl: () => string) {
  const connections = new Set<Connection>();
  const refusals: Array<[number, number]> = [];
  let lastIntents: number | null = null;
  let sessions = 0;
  // A session whose socket is closing (its client left) no longer holds its shard.
  const identified = () => [...connections].filter((connection) => connection.identified && connection.socket.readyState === connection.socket.OPEN);

  const gateway = new WebSocketServer({ server });
  gateway.on('connection', (socket) => {
    const connection: Connection = { socket, identified: false, intents: 0, shard: [0, 1], sequence: 0, heartbeats: new Set() };
    connections.add(connection);
    socket.on('close', () => connections.delete(connection));
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
          // No resuming here: the client identifies anew.
          socket.send(JSON.stringify({ op: 9, d: false, s: null, t: null }));
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
    const owned = world.guilds.filter((guild) => shardOf(guild.id, count) === id);
    dispatch(connection, 'READY', {
      v: 10,
      user: world.botUser,
      guilds: owned.map((guild) => ({ id: guild.id, unavailable: true })),
      session_id: randomBytes(16).toString('hex'),
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
    connection.socket.send(JSON.stringify({ op: 0, t: type, s: connection.sequence, d: data }));
    return connection.sequence;
  }

  /** The session a server's events go to (null: a direct message, shard 0): the newest identified connection of the shard that owns it. */
  function sessionFor(guildId: string | null): Connection {
    const session = identified()
      .filter((connection) => connection.shard[0] === (guildId === null ? 0 : shardOf(guildId, connection.shard[1])))
      .at(-1);
    if (session === undefined) throw new Error(`no bot session of the fake Discord gateway receives ${guildId === null ? 'direct messages' : `server ${guildId}`}`);
    return session;
  }

  /**
   * Resolve once the client has handled the event with this sequence: ask it
   * for a heartbeat (op 1) until the sequence it reports reaches it. The
   * client handles gateway messages in order, so that event was handed on.
   * It waits on the client, not on a clock (a busy machine's client answers
   * late, and the caller's own timeout bounds the wait); it fails at once if
   * the connection closes first, since that client will never take the event.
   */
  async function handled(connection: Connection, sequence: number): Promise<void> {
    for (;;) {
      if (connection.socket.readyState !== connection.socket.OPEN) throw new Error(`the bot's connection closed before it took gateway event ${sequence}`);
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
    close(): void {
      for (const connection of connections) connection.socket.terminate();
      gateway.close();
    },
  };
}
