import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { privateFileMode } from '@roster/config/files';
import { RosterError } from '@roster/errors';

/** The file in an embedded database folder that names the process holding it. */
const lockName = 'roster.lock';
/** A lock file without a process id is being written for this long at most (older Roster wrote it in two steps). */
const unfinishedLockMs = 2_000;

/** Thrown while another running process holds the folder; `holder` is its process id when the lock names one yet. */
export class DataDirInUseError extends RosterError {
  readonly holder: number | undefined;

  constructor(dataDir: string, holder: number | undefined) {
    super('database_in_use', `The embedded database in ${dataDir} is in use by ${holder === undefined ? 'another process' : `process ${holder}`}. Wait for it to finish, or stop it.`);
    this.name = 'DataDirInUseError';
    this.holder = holder;
  }
}

/**
 * Take the embedded database folder for this process, or throw a
 * `DataDirInUseError` naming the running process that has it. The lock file
 * comes into being whole (a hard link to a finished file), so a reader never
 * sees it empty; a lock left by a process that no longer runs is moved aside
 * and the folder taken over, and a lock taken meanwhile by a live process is
 * put back rather than lost. The release removes the lock only while it is
 * still this process's own.
 */
export function acquireDataDirLock(dataDir: string): () => Promise<void> {
  const lockPath = path.join(dataDir, lockName);
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const mine = createLock(lockPath);
    if (mine !== undefined) {
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        const current = statOrUndefined(lockPath);
        if (current !== undefined && current.ino === mine.ino && current.dev === mine.dev) fs.rmSync(lockPath, { force: true });
      };
    }
    const seen = readLock(lockPath);
    if (seen === undefined) continue;
    if (seen.holder !== undefined && isRunning(seen.holder)) throw new DataDirInUseError(dataDir, seen.holder);
    if (seen.holder === undefined && Date.now() - seen.stats.mtimeMs < unfinishedLockMs) {
      throw new DataDirInUseError(dataDir, undefined);
    }
    moveStaleLockAside(lockPath, seen.stats);
  }
  throw new RosterError('database_in_use', `Could not lock the embedded database in ${dataDir}; remove ${lockPath} if no Roster process runs.`);
}

/**
 * Who holds the folder: undefined when nobody does (no lock, or a dead
 * process's), else the running holder's process id (undefined while a lock is
 * still being written).
 */
export function dataDirHolder(dataDir: string): { pid: number | undefined } | undefined {
  const seen = readLock(path.join(dataDir, lockName));
  if (seen === undefined) return undefined;
  if (seen.holder === undefined) return Date.now() - seen.stats.mtimeMs < unfinishedLockMs ? { pid: undefined } : undefined;
  return isRunning(seen.holder) ? { pid: seen.holder } : undefined;
}

/** Create the lock holding this process's id; undefined when one exists. */
function createLock(lockPath: string): fs.Stats | undefined {
  const draft = `${lockPath}.${process.pid}.${randomBytes(4).toString('hex')}`;
  // A new file: its mode is 600 less the umask, so never more than 600.
  fs.writeFileSync(draft, String(process.pid), { flag: 'wx', mode: privateFileMode });
  try {
    fs.linkSync(draft, lockPath);
    return fs.statSync(lockPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw error;
  } finally {
    fs.rmSync(draft, { force: true });
  }
}

function readLock(lockPath: string): { holder: number | undefined; stats: fs.Stats } | undefined {
  try {
    const stats = fs.statSync(lockPath);
    const holder = Number.parseInt(fs.readFileSync(lockPath, 'utf8'), 10);
    return { holder: Number.isInteger(holder) && holder > 0 ? holder : undefined, stats };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Move a dead process's lock out of the way. Two processes may find the same
 * stale lock; the rename lets one of them have it, and a process that moved a
 * newer lock by mistake (taken by a third meanwhile) links it back.
 */
function moveStaleLockAside(lockPath: string, stale: fs.Stats): void {
  const aside = `${lockPath}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    fs.renameSync(lockPath, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    const moved = fs.statSync(aside);
    if (moved.ino !== stale.ino || moved.dev !== stale.dev) {
      try {
        fs.linkSync(aside, lockPath);
      } catch {
        // Another lock is in place already; the one moved aside is gone with the next line.
      }
    }
  } finally {
    fs.rmSync(aside, { force: true });
  }
}

function statOrUndefined(file: string): fs.Stats | undefined {
  try {
    return fs.statSync(file);
  } catch {
    return undefined;
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
