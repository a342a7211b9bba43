import fs from 'node:fs';
import path from 'node:path';
import { privateFileMode } from '@roster/config';
import { RosterError } from '@roster/errors';

/**
 * Take the embedded database folder for this process, or explain who has it.
 * A lock left by a process that no longer runs is taken over.
 */
export function acquireDataDirLock(dataDir: string): () => Promise<void> {
  const lockPath = path.join(dataDir, 'roster.lock');
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      // A new file: its mode is 600 less the umask, so never more than 600.
      fs.writeFileSync(lockPath, String(process.pid), { flag: 'wx', mode: privateFileMode });
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        fs.rmSync(lockPath, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(fs.readFileSync(lockPath, 'utf8'), 10);
      if (Number.isInteger(holder) && holder > 0 && isRunning(holder)) {
        throw new RosterError(
          'database_in_use',
          `The embedded database in ${dataDir} is in use by process ${holder}. Stop that process, or let it share the database with \`roster db serve\` and set DATABASE_URL to the address it prints.`,
        );
      }
      fs.rmSync(lockPath, { force: true });
    }
  }
  throw new RosterError('database_in_use', `Could not lock the embedded database in ${dataDir}; remove ${lockPath} if no Roster process runs.`);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
