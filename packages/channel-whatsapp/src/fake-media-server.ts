/**
 * WhatsApp's media servers, as the far side runs them: a client's upload
 * encrypted with baileys' own media encryption, the encrypted bytes served at
 * their path, 404 for one never uploaded and 410 for one expired. Test-only.
 */
import { randomBytes } from 'node:crypto';
import { readFile, unlink } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encryptedStream, type MediaType } from 'baileys';

/** What a media message carries about its file: where it is, the key that opens it, its hashes and length. */
export interface MediaFields {
  url: string;
  directPath: string;
  mediaKey: Uint8Array;
  fileSha256: Uint8Array;
  fileEncSha256: Uint8Array;
  fileLength: number;
  mediaKeyTimestamp: number;
}

/** The path segment WhatsApp's media servers use for each kind (`/v/t62.7118-24/…` for an image). */
const mediaPaths: Partial<Record<MediaType, string>> = { image: 't62.7118-24', audio: 't62.7117-24', ptt: 't62.7117-24', document: 't62.7119-24', sticker: 't62.15575-24', video: 't62.7161-24' };

export interface FakeMediaServer {
  /** Where the adapter fetches media from (the stand-in for https://mmg.whatsapp.net). */
  origin: string;
  upload(data: Uint8Array, media: MediaType): Promise<MediaFields>;
  /** Makes a file answer 410 from now on, as an expired one does. */
  expire(directPath: string): void;
  /** Paths fetched so far. */
  downloads(): string[];
  close(): Promise<void>;
}

export async function startFakeMediaServer(): Promise<FakeMediaServer> {
  const stored = new Map<string, Buffer>();
  const expired = new Set<string>();
  const downloads: string[] = [];
  // WhatsApp's media servers: the encrypted bytes at their path; 404 for one never uploaded, 410 for one expired.
  const mediaServer = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://media').pathname;
    const body = stored.get(path);
    if (request.method !== 'GET' || body === undefined) return void response.writeHead(404).end();
    if (expired.has(path)) return void response.writeHead(410).end();
    downloads.push(path);
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.byteLength }).end(body);
  });
  await new Promise<void>((resolve) => mediaServer.listen(0, '127.0.0.1', resolve));
  const mediaOrigin = `http://127.0.0.1:${(mediaServer.address() as AddressInfo).port}`;
  let uploads = 0;

  async function upload(data: Uint8Array, media: MediaType): Promise<MediaFields> {
    // What a WhatsApp client does before uploading: baileys' own encryption (a fresh media key, AES-CBC, an HMAC, the hashes).
    const encrypted = await encryptedStream(Buffer.from(data), media);
    const bytes = await readFile(encrypted.encFilePath);
    await unlink(encrypted.encFilePath);
    uploads += 1;
    const path = `/v/${mediaPaths[media] ?? 't62.7119-24'}/${100000 + uploads}_${randomBytes(6).readUIntBE(0, 6)}_n.enc`;
    stored.set(path, bytes);
    const directPath = `${path}?ccb=11-4&oh=01_${randomBytes(16).toString('hex')}&oe=${(Math.floor(Date.now() / 1000) + 14 * 86_400).toString(16).toUpperCase()}&_nc_sid=5e03e0`;
    return {
      url: `https://mmg.whatsapp.net${directPath}&mms3=true`,
      directPath,
      mediaKey: encrypted.mediaKey,
      fileSha256: encrypted.fileSha256,
      fileEncSha256: encrypted.fileEncSha256,
      fileLength: encrypted.fileLength,
      mediaKeyTimestamp: Math.floor(Date.now() / 1000),
    };
  }
  return {
    origin: mediaOrigin,
    upload,
    expire: (directPath) => void expired.add(new URL(directPath, mediaOrigin).pathname),
    downloads: () => [...downloads],
    async close() {
      mediaServer.closeAllConnections();
      await new Promise<void>((resolve) => mediaServer.close(() => resolve()));
    },
  };
}
