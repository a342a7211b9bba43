import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sharedSocketPool } from './embedded-share.js';
import { embeddedSocketPath } from './host-socket.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A frontend message: its type, its length, its body. */
function message(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const head = Buffer.alloc(5);
  head.write(type, 0);
  head.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([head, body]);
}
const text = (value: string) => Buffer.concat([Buffer.from(value), Buffer.from([0])]);
const int16 = (value: number) => Buffer.from([value >> 8, value & 0xff]);
const int32 = (value: number) => {
  const buffer = Buffer.alloc(4);
  buffer.writeInt32BE(value);
  return buffer;
};

/** A raw protocol connection to the folder's host: what a client sends, message by message, and the backend messages it got. */
async function rawConnection(socketPath: string) {
  const socket = net.createConnection(socketPath);
  cleanups.push(() => void socket.destroy());
  let received = Buffer.alloc(0);
  const waiters: Array<() => void> = [];
  socket.on('data', (chunk) => {
    received = Buffer.concat([received, chunk]);
    for (const wake of waiters.splice(0)) wake();
  });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  /** The backend messages received so far, as their type letters and bodies. */
  const messages = () => {
    const list: Array<{ type: string; body: Buffer }> = [];
    for (let at = 0; at + 5 <= received.length; ) {
      const length = received.readInt32BE(at + 1);
      if (at + 1 + length > received.length) break;
      list.push({ type: String.fromCharCode(received[at]!), body: received.subarray(at + 5, at + 1 + length) });
      at += 1 + length;
    }
    return list;
  };
  /** Resolves once `count` ReadyForQuery messages have come in all. */
  const readyFor = async (count: number) => {
    while (messages().filter((item) => item.type === 'Z').length < count) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  const startup = Buffer.concat([int32(196608), text('user'), text('postgres'), text('database'), text('postgres'), Buffer.from([0])]);
  socket.write(Buffer.concat([int32(startup.length + 4), startup]));
  await readyFor(1);
  return { send: (bytes: Buffer) => socket.write(bytes), messages, readyFor };
}

describe('the embedded database host', () => {
  it('runs one connection’s statement whole while another connection’s statements come between its messages', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-host-'));
    cleanups.push(async () => {
      const deadline = Date.now() + 30_000;
      while (fs.existsSync(path.join(dir, 'roster.lock')) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      fs.rmSync(dir, { recursive: true, force: true });
    });
    // A pool of the folder starts its host and keeps it up.
    const pool = sharedSocketPool(dir, { max: 1 });
    cleanups.push(() => pool.end());
    expect((await pool.query('select 1 as one')).rows).toEqual([{ one: 1 }]);

    const first = await rawConnection(embeddedSocketPath(dir));
    const second = await rawConnection(embeddedSocketPath(dir));
    // The first connection parses its statement, outside any transaction, and has not bound it yet.
    first.send(message('P', text(''), text('select $1::int + 1 as answer'), int16(0)));
    // Meanwhile the second runs statements of its own, simple and extended, to their end.
    second.send(message('Q', text('select 2 as other')));
    await second.readyFor(2);
    second.send(
      Buffer.concat([message('P', text(''), text('select 40 as other'), int16(0)), message('B', text(''), text(''), int16(0), int16(0), int16(0)), message('E', text(''), int32(0)), message('S')]),
    );
    await second.readyFor(3);
    // The first binds and runs its own statement: it answers its own question, with no error.
    first.send(Buffer.concat([message('B', text(''), text(''), int16(0), int16(1), int32(2), Buffer.from('41'), int16(0)), message('E', text(''), int32(0)), message('S')]));
    await first.readyFor(2);
    const answered = first.messages().slice(1);
    expect(answered.filter((item) => item.type === 'E').map((item) => item.body.toString('latin1'))).toEqual([]);
    const row = answered.find((item) => item.type === 'D')!;
    expect(row.body.subarray(6).toString()).toBe('42');
    // The control: the second's own answers are its own.
    const rows = second
      .messages()
      .filter((item) => item.type === 'D')
      .map((item) => item.body.subarray(6).toString());
    expect(rows).toEqual(['2', '40']);
  }, 60_000);
});
