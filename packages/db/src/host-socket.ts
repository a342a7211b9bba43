import path from 'node:path';

// Where an embedded folder's host listens and what it reports: the host (embedded-host.ts) imports this, not the pool.

/** The file name node-postgres looks for in a socket folder, for port 5432. */
const embeddedSocketName = '.s.PGSQL.5432';
/** Unix socket paths longer than this do not fit the kernel's limit. */
export const maxSocketPath = 100;
/** What the host says on its IPC channel once it is serving, or why it is not. */
export type HostReport = { kind: 'ready' } | { kind: 'busy' } | { kind: 'failed'; message: string };

/** Where the host of `dataDir` listens. */
export function embeddedSocketPath(dataDir: string): string {
  return path.join(dataDir, embeddedSocketName);
}

/** Whether the folder's socket path fits a Unix socket; if not, the folder cannot be shared. */
export function canShareFolder(dataDir: string): boolean {
  return embeddedSocketPath(dataDir).length <= maxSocketPath;
}
