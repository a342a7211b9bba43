import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { inspect } from 'node:util';
import { RosterError } from '@roster/errors';
import type { Config } from './env.js';
import { makePrivateFolder, privateFileMode } from './private-files.js';

/** The fewest bytes an installation key may have. */
export const minimumKeyBytes = 32;

/** What a valid key looks like, for errors and documentation. */
export const installationKeyFormat = `64 or more hex digits, or base64 of ${minimumKeyBytes} or more bytes (openssl rand -hex 32)`;

/** The name of the key file inside the data folder. */
export const keyFileName = 'secret.key';

/**
 * The bytes a key's text stands for, or null when it is not a key: hex (64
 * or more digits, an even count) or base64/base64url decoding to at least 32
 * bytes. Surrounding whitespace is ignored.
 */
export function parseInstallationKey(text: string): Buffer | null {
  const value = text.trim();
  if (/^[0-9a-fA-F]+$/.test(value) && value.length % 2 === 0 && value.length >= minimumKeyBytes * 2) {
    return Buffer.from(value, 'hex');
  }
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) return null;
  const standard = value.replaceAll('-', '+').replaceAll('_', '/');
  const bytes = Buffer.from(standard, 'base64');
  // Node decodes leniently: a text that does not re-encode to itself is not base64.
  if (bytes.toString('base64').replace(/=+$/, '') !== standard.replace(/=+$/, '')) return null;
  return bytes.length >= minimumKeyBytes ? bytes : null;
}

/**
 * The installation's secret: it keys tombstones (so a forgotten text cannot
 * be found again by hashing guesses) and the audit chain (so no one without
 * it can rewrite history and recompute the links). Its bytes never leave this
 * object: callers get keys derived for one purpose each, and printing or
 * logging it shows only where it came from and its fingerprint.
 */
export class InstallationKey {
  readonly #material: Buffer;
  readonly #derived = new Map<string, Buffer>();
  /** Where the key came from: `ROSTER_SECRET_KEY`, a key file's path, or `given`. */
  readonly source: string;

  constructor(material: Uint8Array, source = 'given') {
    if (material.length < minimumKeyBytes) {
      throw new RosterError('secret_key_invalid', `An installation key needs ${minimumKeyBytes} or more bytes, not ${material.length}.`);
    }
    this.#material = Buffer.from(material);
    this.source = source;
  }

  /** A 32-byte key for one purpose (HKDF-SHA256 with the purpose as its info); the same purpose always gives the same key. */
  derive(purpose: string): Buffer {
    let key = this.#derived.get(purpose);
    if (key === undefined) {
      key = Buffer.from(hkdfSync('sha256', this.#material, 'roster installation key', purpose, 32));
      this.#derived.set(purpose, key);
    }
    return Buffer.from(key);
  }

  /**
   * A secret sealed for storage (AES-256-GCM under a key derived for
   * `purpose`): `v1.<nonce>.<ciphertext>.<tag>`, base64url. `context` (the
   * row it belongs to, say) is authenticated but not stored, so a sealed
   * value copied to another row does not open there.
   */
  seal(purpose: string, plaintext: string | Uint8Array, context = ''): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.derive(`roster/seal/${purpose}`), nonce);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext), cipher.final()]);
    return ['v1', nonce.toString('base64url'), body.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
  }

  /** The bytes of a value `seal` made for the same purpose and context; a wrong key, purpose, context or a changed byte is `secret_unreadable`. */
  openBytes(purpose: string, sealed: string, context = ''): Buffer {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== 'v1') throw new RosterError('secret_unreadable', 'A stored secret is not in a form this version of Roster reads.');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.derive(`roster/seal/${purpose}`), Buffer.from(parts[1]!, 'base64url'));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(Buffer.from(parts[3]!, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(parts[2]!, 'base64url')), decipher.final()]);
    } catch {
      throw new RosterError('secret_unreadable', 'A stored secret does not open with this installation key: it was sealed under another key, or changed.');
    }
  }

  /** The text of a value `seal` made (see `openBytes`). */
  open(purpose: string, sealed: string, context = ''): string {
    return this.openBytes(purpose, sealed, context).toString('utf8');
  }

  /**
   * A short public name of the key (16 hex digits), safe to print and to
   * store: it tells two keys apart and reveals nothing of either.
   */
  get fingerprint(): string {
    return createHmac('sha256', this.derive('roster/fingerprint/v1')).update('roster').digest('hex').slice(0, 16);
  }

  toJSON(): { source: string; fingerprint: string } {
    return { source: this.source, fingerprint: this.fingerprint };
  }

  toString(): string {
    return `InstallationKey(${this.fingerprint} from ${this.source})`;
  }

  [inspect.custom](): string {
    return this.toString();
  }
}

/**
 * The installation key of this process: `ROSTER_SECRET_KEY` when set; else
 * the key file `<ROSTER_DATA_DIR>/secret.key`, made (32 random bytes, mode
 * 600) on first use. Every process of one installation must hold the same
 * key: with a server database (DATABASE_URL), processes may run on several
 * machines, so no key is made up here; one already in the data folder (the
 * embedded database's, shared through `roster db serve`) is used, and without
 * one the process stops, saying to set ROSTER_SECRET_KEY.
 */
export function loadInstallationKey(config: Pick<Config, 'ROSTER_SECRET_KEY' | 'ROSTER_DATA_DIR' | 'DATABASE_URL'>): InstallationKey {
  if (config.ROSTER_SECRET_KEY !== undefined) {
    const bytes = parseInstallationKey(config.ROSTER_SECRET_KEY);
    if (bytes === null) throw new RosterError('secret_key_invalid', `ROSTER_SECRET_KEY is not a valid key: use ${installationKeyFormat}.`);
    return new InstallationKey(bytes, 'ROSTER_SECRET_KEY');
  }
  const file = path.join(config.ROSTER_DATA_DIR, keyFileName);
  const existing = readKeyFile(file);
  if (existing !== null) return existing;
  if (config.DATABASE_URL !== undefined) {
    throw new RosterError(
      'secret_key_missing',
      'ROSTER_SECRET_KEY is not set: with a server database (DATABASE_URL) every Roster process must hold the same key; ' +
        `set ROSTER_SECRET_KEY in each to one value of ${installationKeyFormat}.`,
    );
  }
  return createKeyFile(file);
}

/** The key in `file`, or null when there is no such file; a one-line error when it cannot be read or is not a key. */
function readKeyFile(file: string): InstallationKey | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    throw new RosterError(
      'secret_key_unreadable',
      `The installation key file ${file} cannot be read (${code ?? (error as Error).message}): give this account read access to it, or set ROSTER_SECRET_KEY.`,
      { cause: error },
    );
  }
  const bytes = parseInstallationKey(text);
  if (bytes === null) {
    throw new RosterError(
      'secret_key_invalid',
      `The installation key file ${file} is malformed: it must hold ${installationKeyFormat}. Restore it from a backup; ` +
        'a new key cannot match the tombstones and the audit chain made with the old one.',
    );
  }
  // A copy made with looser modes is tightened: the key is the owner's alone.
  try {
    if ((fs.statSync(file).mode & 0o077) !== 0) fs.chmodSync(file, privateFileMode);
  } catch {
    // Not this account's file: reading it was allowed, and that is what matters here.
  }
  return new InstallationKey(bytes, file);
}

/**
 * Make the key file, or read the one another process made at the same
 * moment: the key is written to a private temporary file and linked into
 * place, which fails when the name exists, so no process ever reads a
 * half-written key and two processes never hold different ones.
 */
function createKeyFile(file: string): InstallationKey {
  makePrivateFolder(path.dirname(file));
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const descriptor = fs.openSync(temporary, 'wx', privateFileMode);
  try {
    fs.writeSync(descriptor, `${randomBytes(minimumKeyBytes).toString('hex')}\n`);
    fs.fsyncSync(descriptor);
  } finally {
    fs.closeSync(descriptor);
  }
  try {
    fs.chmodSync(temporary, privateFileMode);
    fs.linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    fs.rmSync(temporary, { force: true });
  }
  const key = readKeyFile(file);
  if (key === null) throw new RosterError('secret_key_unreadable', `The installation key file ${file} vanished as it was made: try again.`);
  return key;
}
