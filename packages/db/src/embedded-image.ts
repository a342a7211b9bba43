import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { privateFileMode } from '@roster/config/files';
import { RosterError } from '@roster/errors';

/**
 * A consistent image of an embedded database while Roster runs. PGlite is
 * one process's database: only the process that holds the folder (its host,
 * see `embedded-host.ts`) can take it. The host copies the folder's files
 * while PGlite runs no statement and starts none (its own lock for queries,
 * as its `dumpDataDir` does; that function itself cannot be used here, as it
 * fails on the sockets in the folder): the files are then what a crash at
 * that instant would leave, which Postgres opens by replaying its
 * write-ahead log. The image is a tar. The host answers on a second Unix
 * socket in the folder, owner-only like the database's own: a client writes
 * `image\n`, the host answers `ok LENGTH\n` and the tar's bytes, or
 * `error MESSAGE\n`.
 */

/** The image socket's name: as long as the database's own, so a folder that can be shared can also be backed up. */
const imageSocketName = '.s.ROSTER.img';

/** Entries of the folder that belong to the running host, not to the database: left out of a restore. */
export const hostOnlyEntries: ReadonlySet<string> = new Set(['.s.PGSQL.5432', '.s.PGSQL.5432.lock', imageSocketName, 'roster.lock']);

export function imageSocketPath(dataDir: string): string {
  return path.join(dataDir, imageSocketName);
}

/** Serve images of `pglite` on the folder's image socket; `onActivity` keeps the host from leaving mid-image. */
export async function serveImages(pglite: PGlite, dataDir: string, onActivity: () => void): Promise<net.Server> {
  const socketPath = imageSocketPath(dataDir);
  fs.rmSync(socketPath, { force: true });
  const server = net.createServer((socket) => {
    onActivity();
    let asked = '';
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      asked += chunk.toString('utf8');
      if (!asked.includes('\n')) return;
      socket.removeAllListeners('data');
      if (asked.trim() !== 'image') {
        socket.end('error unknown request\n');
        return;
      }
      const busy = setInterval(onActivity, 100);
      pglite
        ._runExclusiveQuery(async () => tarFolder(dataDir))
        .then((bytes) => {
          socket.write(`ok ${bytes.length}\n`);
          socket.end(bytes);
        })
        .catch((error: unknown) => socket.end(`error ${String((error as Error)?.message ?? error).replaceAll('\n', ' ')}\n`))
        .finally(() => {
          clearInterval(busy);
          onActivity();
        });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  fs.chmodSync(socketPath, privateFileMode);
  return server;
}

/** Ask the host of `dataDir` for an image of its database: an uncompressed tar of the data folder. */
export function requestImage(dataDir: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(imageSocketPath(dataDir));
    const chunks: Buffer[] = [];
    socket.on('connect', () => socket.write('image\n'));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', (error) =>
      reject(new RosterError('backup_image_unavailable', `The embedded database in ${dataDir} did not give an image (${error.message}): its process is from an older Roster; stop every Roster process on this folder and run this again.`, { cause: error })),
    );
    socket.on('end', () => {
      const all = Buffer.concat(chunks);
      const newline = all.indexOf(0x0a);
      const first = all.subarray(0, newline < 0 ? all.length : newline).toString('utf8');
      const match = /^ok (\d+)$/.exec(first);
      if (match === null) {
        reject(new RosterError('backup_image_failed', `The embedded database in ${dataDir} could not take an image: ${first.replace(/^error /, '')}.`));
        return;
      }
      const body = all.subarray(newline + 1);
      if (body.length !== Number(match[1])) {
        reject(new RosterError('backup_image_failed', `The image of the embedded database in ${dataDir} arrived cut short (${body.length} of ${match[1]} bytes): run this again.`));
        return;
      }
      resolve(body);
    });
  });
}

/** A tar (ustar) of `folder`'s folders and regular files, leaving out what belongs to the running host. */
function tarFolder(folder: string): Buffer {
  const blocks: Buffer[] = [];
  const walk = (relative: string) => {
    for (const entry of fs.readdirSync(path.join(folder, relative), { withFileTypes: true })) {
      if (relative === '' && hostOnlyEntries.has(entry.name)) continue;
      const name = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) {
        blocks.push(tarHeader(`${name}/`, 0, '5'));
        walk(name);
      } else if (entry.isFile()) {
        const data = fs.readFileSync(path.join(folder, name));
        blocks.push(tarHeader(name, data.length, '0'), data, Buffer.alloc((512 - (data.length % 512)) % 512));
      }
    }
  };
  walk('');
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

function tarHeader(name: string, size: number, type: '0' | '5'): Buffer {
  const header = Buffer.alloc(512);
  let prefix = '';
  let short = name;
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf('/', name.length - 2);
    prefix = name.slice(0, cut);
    short = name.slice(cut + 1);
  }
  const put = (text: string, offset: number, length: number) => header.write(text, offset, length, 'utf8');
  const octal = (value: number, offset: number, length: number) => put(`${value.toString(8).padStart(length - 1, '0')}\0`, offset, length);
  put(short, 0, 100);
  octal(type === '5' ? 0o700 : 0o600, 100, 8);
  octal(0, 108, 8);
  octal(0, 116, 8);
  octal(size, 124, 12);
  octal(Math.floor(Date.now() / 1000), 136, 12);
  put('        ', 148, 8);
  put(type, 156, 1);
  put('ustar\0', 257, 6);
  put('00', 263, 2);
  put(prefix, 345, 155);
  let sum = 0;
  for (const byte of header) sum += byte;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return header;
}
