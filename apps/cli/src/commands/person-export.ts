import fs from 'node:fs';
import path from 'node:path';
import { privateFileMode } from '@roster/config';
import { RosterError, UsageError } from '@roster/errors';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { openRoster } from './roster-runtime.js';

/**
 * Everything Roster holds about one person, as JSON: to a file (mode 600,
 * written whole or not at all) with --out, else to standard output. Read in
 * the person's own scopes, so nothing about anyone else is in it.
 */
export async function runPersonExport(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseCommand(args, { out: { type: 'string' } }, true);
  if (positionals.length !== 1) throw new UsageError('Give one person: roster person export Ada [--out FILE].');
  if (values.out !== undefined && (typeof values.out !== 'string' || values.out.trim() === '')) throw new UsageError('--out takes a file name.');
  // Checked before anything is read, so a mistyped path costs nothing and leaves nothing behind.
  const file = typeof values.out === 'string' ? writableFile(values.out) : undefined;
  const { database, roster } = await openRoster(io);
  let exported: string;
  let name: string;
  try {
    const person = await roster.core.directory.personByName(positionals[0]!);
    name = person.name;
    exported = JSON.stringify(await roster.core.exportPerson(person), null, 2);
  } finally {
    await database.close();
  }
  if (file === undefined) {
    io.out(exported);
    return exitCode.ok;
  }
  writeWhole(file, `${exported}\n`);
  io.err(`Wrote everything Roster holds about ${name} to ${file} (readable by you alone).`);
  return exitCode.ok;
}

/** The absolute path of --out, in a folder that exists, and not a folder itself. */
function writableFile(out: string): string {
  const file = path.resolve(out);
  const folder = path.dirname(file);
  if (!fs.statSync(folder, { throwIfNoEntry: false })?.isDirectory()) throw new RosterError('export_folder_missing', `The folder ${folder} does not exist: create it, or give --out a file in another folder.`);
  if (fs.statSync(file, { throwIfNoEntry: false })?.isDirectory()) throw new RosterError('export_target_folder', `${file} is a folder: give --out a file name.`);
  return file;
}

/** Write to a private temporary file beside `file`, then rename it: a reader never sees half an export, nor a looser mode. */
function writeWhole(file: string, contents: string): void {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  const descriptor = fs.openSync(temporary, 'wx', privateFileMode);
  try {
    fs.writeFileSync(descriptor, contents);
    fs.fchmodSync(descriptor, privateFileMode);
    fs.fsyncSync(descriptor);
  } catch (error) {
    fs.closeSync(descriptor);
    fs.rmSync(temporary, { force: true });
    throw error;
  }
  fs.closeSync(descriptor);
  fs.renameSync(temporary, file);
}
