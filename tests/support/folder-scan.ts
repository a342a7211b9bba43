import fs from 'node:fs';
import path from 'node:path';

/** ASCII letters folded to lower case: the words looked for are ASCII, and a copy may be the typed form or a lower-cased one (normal form, lexeme). */
function foldCase(bytes: Buffer): Buffer {
  const folded = Buffer.from(bytes);
  for (let index = 0; index < folded.length; index += 1) {
    const byte = folded[index]!;
    if (byte >= 0x41 && byte <= 0x5a) folded[index] = byte + 0x20;
  }
  return folded;
}

/** Every regular file under `dir`, at any depth. */
function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(full);
    return entry.isFile() ? [full] : [];
  });
}

/** The files of a data folder (paths relative to it, sorted) that hold `word` in any letter case, and how many bytes were read. */
export function scanFolder(dir: string, word: string): { files: string[]; bytes: number } {
  const needle = Buffer.from(word.toLowerCase(), 'utf8');
  let bytes = 0;
  const files: string[] = [];
  for (const file of filesUnder(dir)) {
    let content: Buffer;
    try {
      content = fs.readFileSync(file);
    } catch (error) {
      // Removed since the listing (the database's pid file as its host stops): nothing left in it to find.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    bytes += content.length;
    if (foldCase(content).includes(needle)) files.push(path.relative(dir, file));
  }
  return { files: files.sort(), bytes };
}

/**
 * A file of the embedded database named for a reader of a failure:
 * `pglite/base/<db>/2619` is pg_statistic (its relfilenode until something
 * rewrites it), where ANALYZE keeps sampled values of every column;
 * `pglite/pg_wal/…` is the write-ahead log.
 */
export function describeDatabaseFile(file: string): string {
  const parts = file.split(path.sep);
  if (parts[0] === 'pglite' && parts[1] === 'base' && /^2619(_fsm|_vm)?(\.\d+)?$/.test(parts[3] ?? '')) return `${file} (pg_statistic)`;
  if (parts[0] === 'pglite' && parts[1] === 'pg_wal') return `${file} (write-ahead log)`;
  return file;
}
