import fs from 'node:fs';
import path from 'node:path';

/** The mode of every folder Roster keeps in the data folder: its owner only. */
export const privateFolderMode = 0o700;
/** The mode of every file Roster keeps in the data folder: its owner only, never executable. */
export const privateFileMode = 0o600;

/**
 * Create `folder` (and missing parents) readable by its owner only, or
 * tighten it if it exists. The data folder holds people's words, so no other
 * account on the machine may list or read it. `mkdir`'s mode is masked by the
 * umask and leaves an existing folder alone, hence the `chmod` after it.
 */
export function makePrivateFolder(folder: string): void {
  fs.mkdirSync(folder, { recursive: true, mode: privateFolderMode });
  fs.chmodSync(folder, privateFolderMode);
}

/**
 * Write `contents` to `file`, readable by its owner only, whatever mode an
 * earlier copy of the file had.
 */
export function writePrivateFile(file: string, contents: string): void {
  fs.writeFileSync(file, contents, { mode: privateFileMode });
  fs.chmodSync(file, privateFileMode);
}

/**
 * Tighten every entry under `folder`: folders to 700, files to 600. For
 * files written by a library that sets its own modes (the embedded database
 * makes its files world-readable and writable). Symbolic links are left
 * alone: their mode means nothing and they may point outside the folder.
 */
export function tightenFolder(folder: string): void {
  const stack = [folder];
  while (stack.length > 0) {
    const current = stack.pop()!;
    const entries = vanishedAsUndefined(() => {
      if ((fs.lstatSync(current).mode & 0o777) !== privateFolderMode) fs.chmodSync(current, privateFolderMode);
      return fs.readdirSync(current, { withFileTypes: true });
    });
    for (const entry of entries ?? []) {
      const entryPath = path.join(current, entry.name);
      if (entry.isDirectory()) stack.push(entryPath);
      else if (entry.isFile()) vanishedAsUndefined(() => (fs.lstatSync(entryPath).mode & 0o777) !== privateFileMode && fs.chmodSync(entryPath, privateFileMode));
      else if (entry.isSocket()) vanishedAsUndefined(() => (fs.lstatSync(entryPath).mode & 0o077) !== 0 && fs.chmodSync(entryPath, privateFileMode));
    }
  }
}

/**
 * `step`'s result, or undefined when the entry it works on was removed
 * meanwhile: the embedded database may be writing the folder while it is
 * tightened, and a file it removed needs no tightening.
 */
function vanishedAsUndefined<T>(step: () => T): T | undefined {
  try {
    return step();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
