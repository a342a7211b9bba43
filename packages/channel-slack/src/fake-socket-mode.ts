/**
 * Slack's Socket Mode, as the far side runs it: a WebSocket (RFC 6455: text
 * frames, ping and close) on the fake Web API's own port, which says hello,
 * sends envelopes and collects the app's acknowledgements. Test-only.
 */
import { createHash, randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { Socket } from 'node:net';

export interface FakeSocketMode {
  /** Sends one envelope to the connected app; resolves with its acknowledgement. */
  sendEnvelope(type: string, payload: unknown): Promise<Record<string, unknown>>;
  destroy(): void;
}

/** Answers WebSocket upgrades on `server` as Slack's Socket Mode endpoint. */
export function attachFakeSocketMode(server: http.Server): FakeSocketMode {
  let socket: Socket | undefined;
  const acks = new Map<string, (ack: Record<string, unknown>) => void>();
  const frame = (opcode: number, payload: Buffer): Buffer => {
    const head = payload.length < 126 ? Buffer.from([0x80 | opcode, payload.length]) : payload.length < 65_536 ? Buffer.alloc(4) : Buffer.alloc(10);
    if (payload.length >= 126) {
      head[0] = 0x80 | opcode;
      if (payload.length < 65_536) {
        head[1] = 126;
        head.writeUInt16BE(payload.length, 2);
      } else {
        head[1] = 127;
        head.writeBigUInt64BE(BigInt(payload.length), 2);
      }
    }
    return Buffer.concat([head, payload]);
  };
  server.on('upgrade', (request, upgraded: Socket) => {
    const key = String(request.headers['sec-websocket-key'] ?? '');
    const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    upgraded.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    socket = upgraded;
    let pending = Buffer.alloc(0);
    upgraded.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 2) {
        const opcode = pending[0]! & 0x0f;
        let length = pending[1]! & 0x7f;
        let offset = 2;
        if (length === 126) {
          length = pending.readUInt16BE(2);
          offset = 4;
        } else if (length === 127) {
          length = Number(pending.readBigUInt64BE(2));
          offset = 10;
        }
        const masked = (pending[1]! & 0x80) !== 0;
        const end = offset + (masked ? 4 : 0) + length;
        if (pending.length < end) return;
        const mask = masked ? pending.subarray(offset, offset + 4) : Buffer.alloc(4);
        const payload = Buffer.from(pending.subarray(end - length, end).map((byte, index) => byte ^ mask[index % 4]!));
        pending = pending.subarray(end);
        if (opcode === 0x9) upgraded.write(frame(0xa, payload));
        else if (opcode === 0x8) {
          upgraded.end(frame(0x8, payload.subarray(0, 2)));
        } else if (opcode === 0x1) {
          const message = JSON.parse(payload.toString('utf8')) as Record<string, unknown>;
          const envelope = String(message.envelope_id ?? '');
          acks.get(envelope)?.(message);
          acks.delete(envelope);
        }
      }
    });
    upgraded.on('error', () => undefined);
    upgraded.write(frame(0x1, Buffer.from(JSON.stringify({ type: 'hello', num_connections: 1, debug_info: { host: 'fake' }, connection_info: { app_id: 'A0ROSTER' } }))));
  });
  return {
    sendEnvelope(type, payload) {
      if (socket === undefined) return Promise.reject(new Error('no Socket Mode connection'));
      const envelope = randomUUID();
      const acked = new Promise<Record<string, unknown>>((resolve) => acks.set(envelope, resolve));
      socket.write(frame(0x1, Buffer.from(JSON.stringify({ envelope_id: envelope, type, payload, accepts_response_payload: type !== 'events_api', retry_attempt: 0, retry_reason: '' }))));
      return acked;
    },
    destroy: () => socket?.destroy(),
  };
}
