/**
 * The process that holds an embedded database folder and serves it to Roster
 * commands. `node embedded-host.js <folder>`, started by the first command
 * that needs the folder (see `embedded-share.ts`), detached from it: it takes
 * the folder's lock, opens PGlite, listens on the Unix socket in the folder
 * (owner-only), says `ready` (or why not) on its IPC channel, and then serves
 * every command that connects. It leaves when nobody has been connected for
 * `idleGraceMs` (for its first connection it waits longer), so no command's end ever cuts off another's connection, and
 * a command run right after the last one finds it still open.
 */
import fs from 'node:fs';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { privateFileMode } from '@roster/config/files';
import { RosterError } from '@roster/errors';
import { imageSocketPath, serveImages } from './embedded-image.js';
import { keepRequestsWhole } from './host-batches.js';
import { embeddedSocketPath, type HostReport } from './host-socket.js';
import { openPglite } from './pglite-open.js';

/** How long the host stays once its last connection has closed (and as many checks, each `idleCheckMs`, that found nobody). */
const idleGraceMs = 2_000;
const idleCheckMs = 100;
/**
 * How long it waits for its first connection: the command that started it
 * connects once told `ready`, which on a busy machine can take longer than
 * the idle grace; a host that left first would make it start another.
 */
const firstConnectionGraceMs = 30_000;
/** Far above what the Roster commands on one machine open (four connections each). */
const maxConnections = 256;

function report(message: HostReport): void {
  process.send?.(message);
}

async function host(dataDir: string): Promise<void> {
  let opened: Awaited<ReturnType<typeof openPglite>>;
  try {
    opened = await openPglite(dataDir);
  } catch (error) {
    const busy = RosterError.isInstance(error) && error.code === 'database_in_use';
    report(busy ? { kind: 'busy' } : { kind: 'failed', message: (error as Error).message });
    process.exitCode = 1;
    return;
  }
  const socketPath = embeddedSocketPath(dataDir);
  // A socket left by a host that died; this process holds the lock, so nobody else listens on it.
  fs.rmSync(socketPath, { force: true });
  const server = new PGLiteSocketServer({ db: opened.pglite, path: socketPath, maxConnections });
  // Idle is counted in checks that ran, not in time gone by: a process starved of the CPU on a busy machine (or
  // stopped) runs its next check late, and the connection waiting meanwhile must not find the host leaving.
  const idleChecks = Math.ceil(idleGraceMs / idleCheckMs);
  let quietChecks = 0;
  let lastBusy = Date.now();
  let served = false;
  /** A connection came (to the database, or for a backup's image). */
  const busy = () => {
    served = true;
    quietChecks = 0;
    lastBusy = Date.now();
  };
  let images: Awaited<ReturnType<typeof serveImages>>;
  try {
    keepRequestsWhole(server);
    await server.start();
    fs.chmodSync(socketPath, privateFileMode);
    // Backups: the image of the database that only this process can take (see embedded-image.ts).
    images = await serveImages(opened.pglite, dataDir, busy);
  } catch (error) {
    await server.stop().catch(() => {});
    await opened.release();
    report({ kind: 'failed', message: `cannot serve it on ${socketPath}: ${(error as Error).message}` });
    process.exitCode = 1;
    return;
  }
  report({ kind: 'ready' });
  if (process.connected) process.disconnect();
  // The wait for the first connection starts now that the command that started it may connect.
  lastBusy = Date.now();

  await new Promise<void>((resolve) => {
    server.addEventListener('connection', busy);
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      clearInterval(timer);
      // Stopped in the same turn as the check: a connection accepted after it is refused, and its command connects again.
      void server.stop().then(resolve, resolve);
    };
    const timer = setInterval(() => {
      if (server.getStats().activeConnections > 0) {
        quietChecks = 0;
        lastBusy = Date.now();
        return;
      }
      quietChecks += 1;
      if (quietChecks >= idleChecks && Date.now() - lastBusy >= (served ? idleGraceMs : firstConnectionGraceMs)) stop();
    }, idleCheckMs);
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await new Promise<void>((resolve) => images.close(() => resolve()));
  fs.rmSync(socketPath, { force: true });
  fs.rmSync(imageSocketPath(dataDir), { force: true });
  await opened.release();
}

const dataDir = process.argv[2];
if (dataDir === undefined || dataDir === '') {
  report({ kind: 'failed', message: 'no folder given' });
  process.exitCode = 2;
} else {
  await host(dataDir);
}
