import fs from 'node:fs';
import path from 'node:path';
import { keyFileName, loadInstallationKey, type Config, type InstallationKey } from '@roster/config';
import { checkRestoreTarget, loadMigrations, openBackupFile, readTombstones, restoreDatabaseImage, type BackupHead, type BackupHeader, type TombstoneRecord } from '@roster/db';
import { RosterError, UsageError } from '@roster/errors';
import { auditHeads, replayForgets, takeBackup } from '@roster/runtime';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { loadConfig, openKeyedRuntime } from '../runtime.js';
import { openRoster } from './roster-runtime.js';

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function printHeads(io: CommandIo, heads: readonly BackupHead[], indent = '  '): void {
  if (heads.length === 0) io.out(`${indent}(no memory events yet)`);
  const width = Math.max(0, ...heads.map((head) => head.agent.length));
  for (const head of heads) io.out(`${indent}${head.agent.padEnd(width)}  ${head.head}`);
}

/** `roster backup --out FILE [--plain] [--json]`: a consistent copy of the running database, sealed with the installation key. */
export async function runBackup(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { out: { type: 'string' }, plain: { type: 'boolean' }, json: { type: 'boolean' } });
  if (typeof values.out !== 'string' || values.out.trim() === '') throw new UsageError('--out FILE is required: where the backup is written.');
  const file = path.resolve(values.out);
  // Checked before anything is read, so a mistyped path costs nothing and leaves nothing behind.
  if (!fs.statSync(path.dirname(file), { throwIfNoEntry: false })?.isDirectory()) throw new RosterError('backup_folder_missing', `The folder ${path.dirname(file)} does not exist: create it, or give --out a file in another folder.`);
  if (fs.existsSync(file)) throw new RosterError('backup_file_exists', `${file} already exists: give --out a new file name (a backup never overwrites one).`);
  const { database, key, config } = await openKeyedRuntime(io);
  let header: BackupHeader;
  try {
    header = await takeBackup({ config, database, key, file, plain: values.plain === true });
  } finally {
    await database.close();
  }
  if (values.json === true) {
    io.out(JSON.stringify({ file, ...header }));
  } else {
    io.out(`Backed up the ${header.database} database to ${file} (${megabytes(fs.statSync(file).size)}, mode 600) in ${(header.tookMs / 1000).toFixed(1)} s.`);
    io.out(header.sealed ? `Sealed with the installation key ${header.keyFingerprint}: it opens only with that key.` : 'NOT sealed (--plain): anyone who can read this file reads every word in it.');
    io.out(`Schema version ${header.schemaVersion}, taken at ${header.takenAt}. The audit chains' heads (keep them off this machine):`);
    printHeads(io, header.heads);
  }
  return exitCode.ok;
}

/** The installation key without making one: a restore needs the key the backup was taken with, and a new key is never it. */
function existingKey(config: Config): InstallationKey {
  if (config.ROSTER_SECRET_KEY === undefined && !fs.existsSync(path.join(config.ROSTER_DATA_DIR, keyFileName))) {
    throw new RosterError(
      'secret_key_missing',
      `No installation key here: copy secret.key from the installation the backup came from into ${config.ROSTER_DATA_DIR}, or set ROSTER_SECRET_KEY to its key.`,
    );
  }
  return loadInstallationKey(config);
}

/** `roster restore FILE [--replay-forgets-from DATABASE_OR_BACKUP]`: into an empty data folder or database; everything is checked before anything is written. */
export async function runRestore(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseCommand(args, { 'replay-forgets-from': { type: 'string' }, json: { type: 'boolean' } }, true);
  if (positionals.length !== 1) throw new UsageError('Give one backup file: roster restore FILE.');
  const replayFrom = values['replay-forgets-from'];
  if (replayFrom !== undefined && (typeof replayFrom !== 'string' || replayFrom.trim() === '')) throw new UsageError('--replay-forgets-from takes a data folder, a backup file or a postgres:// connection string.');
  const file = path.resolve(positionals[0]!);
  const { config } = loadConfig(io);
  const key = existingKey(config);
  const { header, content } = openBackupFile(file, key);
  const known = loadMigrations().length;
  if (header.schemaVersion > known) {
    throw new RosterError('backup_schema_newer', `The backup ${file} has schema version ${header.schemaVersion}, newer than this Roster knows (${known}): restore it with the Roster that took it, or a newer one.`);
  }
  const expected: 'embedded' | 'server' = config.DATABASE_URL === undefined ? 'embedded' : 'server';
  if (header.database !== expected) {
    throw new RosterError('backup_other_kind', `The backup ${file} is of ${header.database === 'embedded' ? 'an embedded database' : 'a server database'}, and this installation uses ${expected === 'embedded' ? 'the embedded one' : 'a server one (DATABASE_URL)'}: restore it into the same kind.`);
  }
  // Read before anything is written, so that a source that cannot be read changes nothing.
  const tombstones: TombstoneRecord[] | undefined = typeof replayFrom === 'string' ? await readTombstones(path.isAbsolute(replayFrom) || /^postgres(ql)?:\/\//.test(replayFrom) ? replayFrom : path.resolve(replayFrom), key) : undefined;
  await checkRestoreTarget(config);
  await restoreDatabaseImage(config, content);
  const { database, roster } = await openRoster(io);
  try {
    const report = tombstones === undefined ? undefined : await replayForgets(database, roster.memory, key, tombstones);
    const now = await auditHeads(database, key);
    if (values.json === true) {
      io.out(JSON.stringify({ restored: file, schemaVersion: header.schemaVersion, takenAt: header.takenAt, backupHeads: header.heads, heads: now, replay: report ?? null }));
      return exitCode.ok;
    }
    io.out(`Restored ${file} (taken at ${header.takenAt}, schema version ${header.schemaVersion}) into ${database.location}.`);
    if (report !== undefined) {
      io.out(
        `Replayed the forgets of ${replayFrom}: ${report.missing} tombstone${report.missing === 1 ? '' : 's'} newer than the backup, ${report.forgotten} fact${report.forgotten === 1 ? '' : 's'} forgotten again` +
          (report.unmatched > 0 ? `, ${report.unmatched} about agents or people made after the backup (nothing of theirs is in it).` : '.'),
      );
    }
    io.out('The audit chains now end at:');
    printHeads(io, now);
    io.out('The backup holds these heads; each must still verify (roster audit verify --agent NAME --expect HEAD):');
    printHeads(io, header.heads);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}
