import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { privateFileMode, type InstallationKey } from '@roster/config';
import { RosterError } from '@roster/errors';

/**
 * A Roster backup file: one line that names the format, one line of JSON
 * (the header: no words of anyone, so it can be read without the key), then
 * the body: the database, gzipped, and sealed with AES-256-GCM under a key
 * derived from the installation key for backups alone (12-byte nonce,
 * ciphertext, 16-byte tag; the two first lines are its additional data, so a
 * changed header does not open either), or left plain when asked.
 */
const backupMagic = 'ROSTER-BACKUP 1';
export const backupFormatVersion = 1;
/** The purpose the backup key is derived for (HKDF info): no other use of the installation key opens a backup. */
const backupKeyPurpose = 'roster/backup/v1';

/** What a backup holds: PGlite's image of its data folder (a tar), or pg_dump's SQL of Roster's schema. */
export type BackupBodyKind = 'pglite-image' | 'pg-dump-sql';

/** An audit chain's head when the backup was taken, as `roster audit verify --expect` takes it. */
export interface BackupHead {
  agent: string;
  agentId: string;
  /** `SEQ:HASH`. */
  head: string;
}

export interface BackupHeader {
  format: 'roster-backup';
  formatVersion: number;
  /** The latest migration of the database backed up. */
  schemaVersion: number;
  database: 'embedded' | 'server';
  body: BackupBodyKind;
  /** When the copy began; a tombstone recorded after this is not in it. */
  takenAt: string;
  /** How long taking the copy took, in milliseconds. */
  tookMs: number;
  heads: BackupHead[];
  /** The installation key's fingerprint: which key the tombstones, the audit chain and (when sealed) the file need. */
  keyFingerprint: string;
  sealed: boolean;
  /** The body's size in the file, in bytes. */
  bytes: number;
}

/** Write a backup file: created with mode 600 (never loosened after), whole or not at all. */
export function writeBackupFile(file: string, header: Omit<BackupHeader, 'format' | 'formatVersion' | 'bytes' | 'sealed' | 'keyFingerprint'>, content: Buffer, key: InstallationKey, options: { plain: boolean }): BackupHeader {
  const packed = gzipSync(content, { level: 6 });
  const sealedLength = options.plain ? packed.length : 12 + packed.length + 16;
  const full: BackupHeader = { format: 'roster-backup', formatVersion: backupFormatVersion, ...header, keyFingerprint: key.fingerprint, sealed: !options.plain, bytes: sealedLength };
  const preamble = Buffer.from(`${backupMagic}\n${JSON.stringify(full)}\n`, 'utf8');
  let body = packed;
  if (!options.plain) {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key.derive(backupKeyPurpose), nonce);
    cipher.setAAD(preamble);
    body = Buffer.concat([nonce, cipher.update(packed), cipher.final(), cipher.getAuthTag()]);
  }
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  const descriptor = fs.openSync(temporary, 'wx', privateFileMode);
  try {
    fs.writeSync(descriptor, preamble);
    fs.writeSync(descriptor, body);
    fs.fsyncSync(descriptor);
    fs.closeSync(descriptor);
    fs.renameSync(temporary, file);
  } catch (error) {
    try {
      fs.closeSync(descriptor);
    } catch {
      // Closed already.
    }
    fs.rmSync(temporary, { force: true });
    throw new RosterError('backup_write_failed', `The backup could not be written to ${file}: ${(error as Error).message}. Nothing was left behind.`, { cause: error });
  }
  return full;
}

/** The header of a backup file, read without the key; a file that is not a backup is said so. */
export function readBackupHeader(file: string): { header: BackupHeader; preamble: Buffer; body: Buffer } {
  let all: Buffer;
  try {
    all = fs.readFileSync(file);
  } catch (error) {
    throw new RosterError('backup_unreadable', `The backup ${file} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`, { cause: error });
  }
  const first = all.indexOf(0x0a);
  const second = first < 0 ? -1 : all.indexOf(0x0a, first + 1);
  if (first < 0 || second < 0 || all.subarray(0, first).toString('utf8') !== backupMagic) {
    throw new RosterError('backup_not_roster', `${file} is not a Roster backup (it does not begin with "${backupMagic}").`);
  }
  let header: BackupHeader;
  try {
    header = JSON.parse(all.subarray(first + 1, second).toString('utf8')) as BackupHeader;
  } catch {
    throw new RosterError('backup_damaged', `The backup ${file} has a damaged header: it was changed or cut short.`);
  }
  if (header.format !== 'roster-backup' || typeof header.schemaVersion !== 'number' || !Array.isArray(header.heads)) {
    throw new RosterError('backup_damaged', `The backup ${file} has a damaged header: it was changed or cut short.`);
  }
  if (header.formatVersion > backupFormatVersion) {
    throw new RosterError('backup_too_new', `The backup ${file} is in format ${header.formatVersion}, newer than this Roster reads (${backupFormatVersion}): restore it with the Roster that took it.`);
  }
  return { header, preamble: all.subarray(0, second + 1), body: all.subarray(second + 1) };
}

/** The database a backup file holds, opened with `key`: another key, or a changed byte, is refused in one line. */
export function openBackupFile(file: string, key: InstallationKey): { header: BackupHeader; content: Buffer } {
  const { header, preamble, body } = readBackupHeader(file);
  if (header.keyFingerprint !== key.fingerprint) {
    throw new RosterError(
      'backup_other_key',
      `The backup ${file} was ${header.sealed ? 'sealed' : 'taken'} with another installation key (fingerprint ${header.keyFingerprint}; this one is ${key.fingerprint}): use the key of the installation it came from (its secret.key, or ROSTER_SECRET_KEY).`,
    );
  }
  const changed = () => new RosterError('backup_changed', `The backup ${file} was changed or cut short after it was written: it does not open with its installation key, and nothing was restored from it.`);
  if (body.length !== header.bytes) throw changed();
  let packed = body;
  if (header.sealed) {
    if (body.length < 28) throw changed();
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.derive(backupKeyPurpose), body.subarray(0, 12));
      decipher.setAAD(preamble);
      decipher.setAuthTag(body.subarray(body.length - 16));
      packed = Buffer.concat([decipher.update(body.subarray(12, body.length - 16)), decipher.final()]);
    } catch {
      throw changed();
    }
  }
  try {
    return { header, content: gunzipSync(packed) };
  } catch {
    throw changed();
  }
}
