import { createHash, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import { servedSession } from './served-session.js';

/** Protocol codes of the first message a Postgres client sends. */
const protocolVersion3 = 196_608;
const sslRequestCode = 80_877_103;
const gssEncryptionRequestCode = 80_877_104;
const cancelRequestCode = 80_877_102;
/** Larger first messages or passwords are not from a Postgres client. */
const maxStartupLength = 10_000;
const maxPasswordLength = 1_024;
/** As Postgres's authentication_timeout: a client that never answers is let go. */
const authenticationTimeoutMs = 60_000;

export interface PasswordGateOptions {
  /** Where clients connect. */
  host: string;
  port: number;
  /** The only user name accepted. */
  user: string;
  /** The password a client must send. */
  password: string;
  /** The Unix socket of the database the gate hands authenticated clients to. */
  upstreamPath: string;
  /**
   * How long a client may sit idle inside a transaction (default 30 s), as
   * Postgres's idle_in_transaction_session_timeout: then the gate rolls the
   * transaction back in the shared session and closes that client with
   * SQLSTATE 25P03. 0 never does.
   */
  idleInTransactionMs?: number;
}

/** The default of `idleInTransactionMs`. */
export const defaultIdleInTransactionMs = 30_000;

export interface PasswordGate {
  /** The port it listens on (the one asked for, or the one given for 0). */
  port: number;
  close(): Promise<void>;
}

/**
 * A Postgres wire-protocol front that asks each client for a password before
 * handing its connection to the database behind it. The embedded database's
 * socket server has no authentication at all, and a TCP port on loopback is
 * open to every account on the machine; the gate is what makes the port the
 * owner's. It speaks just enough of the protocol: it declines SSL, reads the
 * StartupMessage, asks for a cleartext password (the port is loopback, and
 * node-postgres, psql and every driver support it), compares in constant
 * time, and refuses with SQLSTATE 28P01 as Postgres does. An accepted client
 * is connected to `upstreamPath`, its StartupMessage passed on unchanged, and
 * the messages passed both ways, read on the way in so that nothing the
 * client sends changes the session every Roster process shares (see
 * `served-session.ts`). One session at a time: the embedded database is
 * a single session, and a second one is refused with SQLSTATE 53300 until the
 * first has closed.
 */
export async function startPasswordGate(options: PasswordGateOptions): Promise<PasswordGate> {
  const expectedUser = digest(Buffer.from(options.user));
  const expectedPassword = digest(Buffer.from(options.password));
  const sockets = new Set<net.Socket>();
  let sessionOpen = false;

  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    client.setNoDelay(true);
    client.setTimeout(authenticationTimeoutMs, () => client.destroy());
    let buffered = Buffer.alloc(0);
    let startup: Buffer | undefined;
    let user = '';

    const refuse = (sqlState: string, message: string) => {
      client.removeListener('data', onData);
      client.end(errorResponse(sqlState, message));
    };

    const admit = (rest: Buffer) => {
      client.removeListener('data', onData);
      client.setTimeout(0);
      if (sessionOpen) {
        client.end(errorResponse('53300', 'the embedded database serves one connection at a time; close the other one first'));
        return;
      }
      sessionOpen = true;
      let released = false;
      /** Set once the client was let go for idling in a transaction: the upstream is rolled back before it is closed. */
      let rollingBack = false;
      const release = () => {
        if (released || rollingBack) return;
        released = true;
        sessionOpen = false;
        upstream.destroy();
        client.destroy();
      };
      const idleMs = options.idleInTransactionMs ?? defaultIdleInTransactionMs;
      let idle: NodeJS.Timeout | undefined;
      const stopIdle = () => {
        if (idle !== undefined) clearTimeout(idle);
        idle = undefined;
      };
      /** After a ReadyForQuery inside a transaction, the client has `idleMs` to say something. */
      const watchIdle = () => {
        stopIdle();
        if (idleMs > 0 && session.transactionStatus() !== 'I') idle = setTimeout(expire, idleMs);
      };
      const expire = () => {
        idle = undefined;
        rollingBack = true;
        client.removeAllListeners('data');
        upstream.removeAllListeners('data');
        // The session is every Roster process's: roll back there and free it, and only then tell the client and
        // hang up, so that a client that connects again once it sees the end finds the session free.
        let answer = Buffer.alloc(0);
        upstream.on('data', (chunk: Buffer) => {
          answer = Buffer.concat([answer, chunk]);
          if (!readyForQuery(answer)) return;
          rollingBack = false;
          released = true;
          sessionOpen = false;
          upstream.end(terminate);
          client.end(errorResponse('25P03', `terminating connection due to idle-in-transaction timeout (${idleMs / 1000} s, roster db serve --idle-in-transaction-timeout): its transaction was rolled back`));
        });
        upstream.write(simpleQuery('rollback'));
      };
      // Released as soon as the client hangs up, so that it may connect again at once.
      client.on('end', release);
      client.on('close', release);
      client.pause();
      const session = servedSession();
      const upstream = net.createConnection(options.upstreamPath, () => {
        upstream.write(startup!);
        if (rest.length > 0) upstream.write(session.fromClient(rest));
        relay(client, upstream, (chunk) => {
          stopIdle();
          return session.fromClient(chunk);
        });
        relay(upstream, client, (chunk) => {
          const out = session.fromDatabase(chunk);
          watchIdle();
          return out;
        });
        client.resume();
      });
      sockets.add(upstream);
      upstream.on('close', () => {
        sockets.delete(upstream);
        stopIdle();
        rollingBack = false;
        release();
      });
      upstream.on('error', () => {
        if (!client.destroyed && client.writable) client.end(errorResponse('08006', 'the embedded database is not reachable'));
        release();
      });
    };

    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (true) {
        if (startup === undefined) {
          if (buffered.length < 8) return;
          const length = buffered.readInt32BE(0);
          if (length < 8 || length > maxStartupLength) return refuse('08P01', 'invalid startup packet');
          if (buffered.length < length) return;
          const code = buffered.readInt32BE(4);
          const message = buffered.subarray(0, length);
          buffered = buffered.subarray(length);
          if (code === sslRequestCode || code === gssEncryptionRequestCode) {
            client.write('N');
            continue;
          }
          if (code === cancelRequestCode) {
            client.destroy();
            return;
          }
          if (code !== protocolVersion3) return refuse('0A000', 'unsupported frontend protocol: the embedded database speaks protocol 3.0');
          startup = Buffer.from(message);
          user = startupParameters(message).get('user') ?? '';
          client.write(authenticationCleartextPassword());
          continue;
        }
        if (buffered.length < 5) return;
        if (buffered[0] !== 0x70) return refuse('08P01', 'expected a password message');
        const length = buffered.readInt32BE(1);
        if (length < 5 || length > maxPasswordLength) return refuse('08P01', 'invalid password packet');
        if (buffered.length < length + 1) return;
        const given = buffered.subarray(5, length + 1);
        const password = given[given.length - 1] === 0 ? given.subarray(0, given.length - 1) : given;
        const rest = buffered.subarray(length + 1);
        // Both compared every time, so that the answer's timing tells nothing about which was wrong.
        const userMatches = timingSafeEqual(digest(Buffer.from(user)), expectedUser);
        const passwordMatches = timingSafeEqual(digest(password), expectedPassword);
        if (!userMatches || !passwordMatches) return refuse('28P01', `password authentication failed for user "${user}"`);
        return admit(rest);
      }
    };
    client.on('data', onData);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : options.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Send what `from` says, read through `filter`, on to `to`, pausing `from`
 * while `to` cannot take more, and ending `to` when `from` ends.
 */
function relay(from: net.Socket, to: net.Socket, filter: (chunk: Buffer) => Buffer): void {
  from.on('data', (chunk: Buffer) => {
    const out = filter(chunk);
    if (out.length === 0 || to.destroyed) return;
    if (!to.write(out)) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  });
  from.on('end', () => to.end());
}

/** Whether `bytes`, the database's answer, holds a ReadyForQuery message. */
function readyForQuery(bytes: Buffer): boolean {
  let at = 0;
  while (bytes.length - at >= 5) {
    if (bytes[at] === 0x5a) return true;
    at += bytes.readInt32BE(at + 1) + 1;
  }
  return false;
}

/** A simple Query message. */
function simpleQuery(sql: string): Buffer {
  const body = Buffer.from(`${sql}\0`, 'utf8');
  const header = Buffer.alloc(5);
  header.write('Q', 0, 'latin1');
  header.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([header, body]);
}

/** The Terminate message. */
const terminate = Buffer.from([0x58, 0, 0, 0, 4]);

/** Equal-length values for `timingSafeEqual`, whatever the lengths of the inputs. */
function digest(value: Buffer): Buffer {
  return createHash('sha256').update(value).digest();
}

/** The name/value pairs after the protocol code of a StartupMessage. */
function startupParameters(message: Buffer): Map<string, string> {
  const parameters = new Map<string, string>();
  const fields = message.subarray(8).toString('utf8').split('\0');
  for (let index = 0; index + 1 < fields.length && fields[index] !== ''; index += 2) parameters.set(fields[index]!, fields[index + 1]!);
  return parameters;
}

/** `R`, length 8, 3: "send me your password in clear". */
function authenticationCleartextPassword(): Buffer {
  const message = Buffer.alloc(9);
  message.write('R', 0, 'latin1');
  message.writeInt32BE(8, 1);
  message.writeInt32BE(3, 5);
  return message;
}

/** A FATAL ErrorResponse with its SQLSTATE, as Postgres sends before closing. */
function errorResponse(sqlState: string, text: string): Buffer {
  const field = (type: string, value: string) => Buffer.concat([Buffer.from(type, 'latin1'), Buffer.from(value, 'utf8'), Buffer.from([0])]);
  const fields = Buffer.concat([field('S', 'FATAL'), field('V', 'FATAL'), field('C', sqlState), field('M', text), Buffer.from([0])]);
  const header = Buffer.alloc(5);
  header.write('E', 0, 'latin1');
  header.writeInt32BE(4 + fields.length, 1);
  return Buffer.concat([header, fields]);
}
