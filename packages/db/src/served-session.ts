import { refusal, refusalPrefix, sessionChange, type SessionChange } from './session-guard.js';

/**
 * The conversation between a `roster db serve` client and the embedded
 * database, read message by message once the client is admitted, so that
 * nothing it sends changes the session every other Roster process shares
 * (see `session-guard.ts` for what is refused and why).
 *
 * A refused statement never reaches the database. In its place the gate
 * sends a DO block that raises the refusal, so that the database itself
 * answers with the error and its ReadyForQuery: the client sees the error
 * where Postgres would have put it, a transaction it had open is aborted as
 * Postgres aborts one on any error, and the connection stays usable.
 * - A simple Query: replaced whole (a multi-statement query with one refused
 *   statement runs none of them, as the implicit transaction it would be
 *   rolled back anyway).
 * - A Parse (extended protocol) of a refused statement, or of any named
 *   statement: replaced by Parse, Bind and Execute of the DO block; the
 *   client's messages up to its Sync are dropped, as Postgres discards them
 *   after an error. The ParseComplete and BindComplete of those three are
 *   not the client's, and are kept from it.
 * - A FunctionCall (fastpath, by OID): refused whole.
 */
export interface ServedSession {
  /** The client's bytes in; what to send to the database. */
  fromClient(chunk: Buffer): Buffer;
  /** The database's bytes in; what to send to the client. */
  fromDatabase(chunk: Buffer): Buffer;
  /**
   * The transaction status of the last ReadyForQuery the database sent:
   * `I` idle, `T` in a transaction, `E` in a failed transaction.
   */
  transactionStatus(): 'I' | 'T' | 'E';
}

/** One request–ReadyForQuery cycle, and whether the gate put a refusal in it whose completions are still to be kept from the client. */
interface Cycle {
  refusing: boolean;
}

export function servedSession(): ServedSession {
  let fromClientBuffer: Buffer = Buffer.alloc(0);
  let fromDatabaseBuffer: Buffer = Buffer.alloc(0);
  // The startup's own ReadyForQuery is the first the database sends.
  const cycles: Cycle[] = [{ refusing: false }];
  // The extended-protocol batch the client is sending, up to its Sync: its cycle is in `cycles` from its first message on.
  let batch: Cycle | undefined;
  const openBatch = (): Cycle => {
    if (batch === undefined) {
      batch = { refusing: false };
      cycles.push(batch);
    }
    return batch;
  };
  const endBatch = () => {
    openBatch();
    batch = undefined;
  };
  let droppingUntilSync = false;
  let held: Buffer[] = [];
  let status: 'I' | 'T' | 'E' = 'I';

  return {
    fromClient(chunk) {
      const [messages, rest] = frames(Buffer.concat([fromClientBuffer, chunk]));
      fromClientBuffer = rest;
      const out: Buffer[] = [];
      for (const message of messages) {
        const type = String.fromCharCode(message[0]!);
        if (droppingUntilSync) {
          if (type === 'S') {
            droppingUntilSync = false;
            out.push(message);
            endBatch();
          }
          continue;
        }
        switch (type) {
          case 'Q': {
            const found = sessionChange(cstring(message, 5)[0]);
            out.push(found === undefined ? message : query(raise(found)));
            cycles.push({ refusing: false });
            break;
          }
          case 'P': {
            const [name, after] = cstring(message, 5);
            const found = name !== '' ? refusal('prepared') : sessionChange(cstring(message, after)[0]);
            if (found === undefined) {
              openBatch();
              out.push(message);
              break;
            }
            out.push(parse(raise(found)), bind(), execute());
            openBatch().refusing = true;
            droppingUntilSync = true;
            break;
          }
          case 'F':
            out.push(query(raise(refusal('functionCall'))));
            cycles.push({ refusing: false });
            break;
          case 'S':
            out.push(message);
            endBatch();
            break;
          case 'B':
          case 'D':
          case 'E':
          case 'C':
          case 'H':
            openBatch();
            out.push(message);
            break;
          default:
            // Copy data, Terminate: part of a cycle already counted, or the end.
            out.push(message);
        }
      }
      return Buffer.concat(out);
    },

    fromDatabase(chunk) {
      const [messages, rest] = frames(Buffer.concat([fromDatabaseBuffer, chunk]));
      fromDatabaseBuffer = rest;
      const out: Buffer[] = [];
      const release = () => {
        out.push(...held);
        held = [];
      };
      for (const message of messages) {
        const type = String.fromCharCode(message[0]!);
        const cycle = cycles[0];
        if (cycle?.refusing === true) {
          // The refusal's ParseComplete and BindComplete come right before its error, with nothing between.
          if (type === '1') {
            release();
            held = [message];
            continue;
          }
          if (type === '2' && held.length === 1) {
            held.push(message);
            continue;
          }
          if (type === 'E' && held.length === 2 && isRefusal(message)) {
            held = [];
            cycle.refusing = false;
            out.push(message);
            continue;
          }
        }
        release();
        out.push(message);
        if (type === 'Z') {
          cycles.shift();
          status = String.fromCharCode(message[5] ?? 0x49) as 'I' | 'T' | 'E';
        }
      }
      return Buffer.concat(out);
    },

    transactionStatus: () => status,
  };
}

/** The complete messages at the start of `buffer` (type byte, length, body), and what is left. */
function frames(buffer: Buffer): [Buffer[], Buffer] {
  const messages: Buffer[] = [];
  let at = 0;
  while (buffer.length - at >= 5) {
    const length = buffer.readInt32BE(at + 1);
    if (buffer.length - at < length + 1) break;
    messages.push(buffer.subarray(at, at + length + 1));
    at += length + 1;
  }
  return [messages, Buffer.from(buffer.subarray(at))];
}

/** The NUL-terminated string at `start`, and where the next field begins. */
function cstring(message: Buffer, start: number): [string, number] {
  const end = message.indexOf(0, start);
  const stop = end === -1 ? message.length : end;
  return [message.toString('utf8', start, stop), stop + 1];
}

/** An SQL string literal (standard conforming strings). */
function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** A DO block that raises the refusal, with SQLSTATE 0A000 (feature not supported). */
function raise(found: SessionChange): string {
  return `do $roster_refusal$ begin raise exception using errcode = '0A000', message = ${literal(found.message)}, hint = ${literal(found.hint)}; end $roster_refusal$`;
}

/** Whether an ErrorResponse is one of the gate's refusals. */
function isRefusal(message: Buffer): boolean {
  let at = 5;
  while (at < message.length && message[at] !== 0) {
    const field = String.fromCharCode(message[at]!);
    const [value, next] = cstring(message, at + 1);
    if (field === 'M') return value.startsWith(refusalPrefix);
    at = next;
  }
  return false;
}

function wireMessage(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([header, body]);
}

const nul = Buffer.from([0]);
const zero16 = Buffer.from([0, 0]);

function text(value: string): Buffer {
  return Buffer.concat([Buffer.from(value, 'utf8'), nul]);
}

function query(sql: string): Buffer {
  return wireMessage('Q', text(sql));
}

/** Parse into the unnamed statement, with no parameter types. */
function parse(sql: string): Buffer {
  return wireMessage('P', text(''), text(sql), zero16);
}

/** Bind the unnamed statement to the unnamed portal: no parameters, no format codes. */
function bind(): Buffer {
  return wireMessage('B', text(''), text(''), zero16, zero16, zero16);
}

/** Execute the unnamed portal, all rows. */
function execute(): Buffer {
  return wireMessage('E', text(''), Buffer.alloc(4));
}
