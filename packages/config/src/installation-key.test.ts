import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { RosterError } from '@roster/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from './env.js';
import { loadInstallationKey, type InstallationKey } from './installation-key.js';

const folders: string[] = [];
afterEach(() => {
  while (folders.length > 0) fs.rmSync(folders.pop()!, { recursive: true, force: true });
});

/** A data folder of its own (not yet created: the key file's folder is made on first use). */
function dataDir(): string {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-key-'));
  folders.push(parent);
  return path.join(parent, 'data');
}

const config = (env: Record<string, string>) => parseConfig({ ...env });
const keyFile = (dir: string) => path.join(dir, 'secret.key');
const modeOf = (file: string) => fs.statSync(file).mode & 0o777;

/** The error `load` throws, which must be a RosterError. */
function failure(load: () => unknown): RosterError {
  try {
    load();
  } catch (error) {
    expect(RosterError.isInstance(error)).toBe(true);
    return error as RosterError;
  }
  throw new Error('expected loading the key to fail');
}

/** The fingerprint a separate Node process loads from `dir`, through the built package. */
function fingerprintInProcess(dir: string): Promise<string> {
  const entry = pathToFileURL(fileURLToPath(new URL('../dist/index.js', import.meta.url))).href;
  const script = `
    const { loadInstallationKey, parseConfig } = await import(${JSON.stringify(entry)});
    process.stdout.write(loadInstallationKey(parseConfig({ ROSTER_DATA_DIR: ${JSON.stringify(dir)} })).fingerprint);
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${err}`))));
  });
}

describe('the key file', () => {
  it('is made on first use, 32 random bytes in hex, readable by its owner only, and reused after', () => {
    const dir = dataDir();
    expect(fs.existsSync(keyFile(dir))).toBe(false);
    const first = loadInstallationKey(config({ ROSTER_DATA_DIR: dir }));
    expect(fs.readFileSync(keyFile(dir), 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    expect(modeOf(keyFile(dir))).toBe(0o600);
    expect(modeOf(dir)).toBe(0o700);
    expect(first.source).toBe(keyFile(dir));
    const again = loadInstallationKey(config({ ROSTER_DATA_DIR: dir }));
    expect(again.fingerprint).toBe(first.fingerprint);
    // Nothing but the key file is left behind.
    expect(fs.readdirSync(dir)).toEqual(['secret.key']);
  });

  it('is the same key in every process, even for processes that make it at the same moment', async () => {
    const dir = dataDir();
    const fingerprints = await Promise.all(Array.from({ length: 4 }, () => fingerprintInProcess(dir)));
    const here = loadInstallationKey(config({ ROSTER_DATA_DIR: dir })).fingerprint;
    expect(fingerprints).toEqual([here, here, here, here]);
    expect(fs.readdirSync(dir)).toEqual(['secret.key']);
    // Positive control: another folder gets another key.
    expect(await fingerprintInProcess(dataDir())).not.toBe(here);
  });

  it('is tightened to mode 600 when a copy made it readable by others', () => {
    const dir = dataDir();
    const made = loadInstallationKey(config({ ROSTER_DATA_DIR: dir }));
    fs.chmodSync(keyFile(dir), 0o644);
    expect(loadInstallationKey(config({ ROSTER_DATA_DIR: dir })).fingerprint).toBe(made.fingerprint);
    expect(modeOf(keyFile(dir))).toBe(0o600);
  });

  it('stops with one line naming the file when it is malformed or unreadable, and changes nothing', () => {
    const dir = dataDir();
    fs.mkdirSync(dir, { recursive: true });
    const secret = randomBytes(12).toString('hex');
    fs.writeFileSync(keyFile(dir), `${secret}\n`, { mode: 0o600 });
    const malformed = failure(() => loadInstallationKey(config({ ROSTER_DATA_DIR: dir })));
    expect(malformed.code).toBe('secret_key_invalid');
    expect(malformed.message).toContain(keyFile(dir));
    expect(malformed.message).toContain('64 or more hex digits');
    expect(malformed.message).not.toContain('\n');
    expect(malformed.message).not.toContain(secret);
    expect(fs.readFileSync(keyFile(dir), 'utf8')).toBe(`${secret}\n`);

    fs.rmSync(keyFile(dir));
    fs.mkdirSync(keyFile(dir));
    const unreadable = failure(() => loadInstallationKey(config({ ROSTER_DATA_DIR: dir })));
    expect(unreadable.code).toBe('secret_key_unreadable');
    expect(unreadable.message).toMatch(new RegExp(`^The installation key file ${keyFile(dir).replaceAll('/', '\\/')} cannot be read \\(EISDIR\\)`));
    expect(unreadable.message).not.toContain('\n');

    // Positive control: a well-formed file, in base64, loads.
    fs.rmSync(keyFile(dir), { recursive: true });
    fs.writeFileSync(keyFile(dir), randomBytes(32).toString('base64'), { mode: 0o600 });
    expect(loadInstallationKey(config({ ROSTER_DATA_DIR: dir })).source).toBe(keyFile(dir));
  });
});

describe('ROSTER_SECRET_KEY', () => {
  it('takes precedence over the key file, which it leaves alone', () => {
    const dir = dataDir();
    const file = loadInstallationKey(config({ ROSTER_DATA_DIR: dir }));
    const before = fs.readFileSync(keyFile(dir), 'utf8');
    const hex = randomBytes(32).toString('hex');
    const fromEnvironment = loadInstallationKey(config({ ROSTER_DATA_DIR: dir, ROSTER_SECRET_KEY: hex }));
    expect(fromEnvironment.source).toBe('ROSTER_SECRET_KEY');
    expect(fromEnvironment.fingerprint).not.toBe(file.fingerprint);
    expect(fs.readFileSync(keyFile(dir), 'utf8')).toBe(before);
    // The same bytes in base64 are the same key.
    const base64 = Buffer.from(hex, 'hex').toString('base64');
    expect(loadInstallationKey(config({ ROSTER_DATA_DIR: dir, ROSTER_SECRET_KEY: base64 })).fingerprint).toBe(fromEnvironment.fingerprint);
    // Set, it means no key file is made.
    const fresh = dataDir();
    loadInstallationKey(config({ ROSTER_DATA_DIR: fresh, ROSTER_SECRET_KEY: hex }));
    expect(fs.existsSync(keyFile(fresh))).toBe(false);
  });

  it('is refused in one line when malformed, without echoing it', () => {
    for (const value of ['too-short', 'ab'.repeat(16), 'not base64 at all!'.repeat(4)]) {
      let message = '';
      try {
        parseConfig({ ROSTER_SECRET_KEY: value });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message.split('\n')).toEqual(['Invalid configuration:', expect.stringMatching(/^ {2}ROSTER_SECRET_KEY: the value is not valid; expected 64 or more hex digits/)]);
      expect(message).not.toContain(value);
    }
    // The key itself checks too, for callers that build a config by hand.
    const malformed = failure(() => loadInstallationKey({ ROSTER_SECRET_KEY: 'short', ROSTER_DATA_DIR: dataDir(), DATABASE_URL: undefined }));
    expect(malformed).toMatchObject({ code: 'secret_key_invalid', message: expect.not.stringContaining('short') });
  });
});

describe('with a server database', () => {
  const serverUrl = 'postgres://roster@db.internal:5432/roster';

  it('makes up no key: without ROSTER_SECRET_KEY and without a key file it stops, saying to set it', () => {
    const dir = dataDir();
    const missing = failure(() => loadInstallationKey(config({ ROSTER_DATA_DIR: dir, DATABASE_URL: serverUrl })));
    expect(missing.code).toBe('secret_key_missing');
    expect(missing.message).toMatch(/^ROSTER_SECRET_KEY is not set: with a server database \(DATABASE_URL\) every Roster process must hold the same key/);
    expect(missing.message).not.toContain('\n');
    expect(fs.existsSync(keyFile(dir))).toBe(false);

    // Positive controls: the variable works, and so does a key file the embedded database made (shared through db serve).
    const hex = randomBytes(32).toString('hex');
    expect(loadInstallationKey(config({ ROSTER_DATA_DIR: dir, DATABASE_URL: serverUrl, ROSTER_SECRET_KEY: hex })).source).toBe('ROSTER_SECRET_KEY');
    const embedded: InstallationKey = loadInstallationKey(config({ ROSTER_DATA_DIR: dir }));
    expect(loadInstallationKey(config({ ROSTER_DATA_DIR: dir, DATABASE_URL: serverUrl })).fingerprint).toBe(embedded.fingerprint);
  });
});

describe('sealed secrets', () => {
  const keyOf = () => loadInstallationKey(config({ ROSTER_DATA_DIR: dataDir(), ROSTER_SECRET_KEY: randomBytes(32).toString('hex') }));

  it('opens only with the same key, purpose and context, and the sealed text holds none of the secret', () => {
    const key = keyOf();
    const token = '123456:AAE-telegram-bot-token';
    const sealed = key.seal('channel-token', token, 'telegram/default');
    expect(sealed).not.toContain(token);
    expect(sealed).not.toContain(Buffer.from(token).toString('base64url'));
    // Two seals of one secret differ (a fresh nonce each time).
    expect(key.seal('channel-token', token, 'telegram/default')).not.toBe(sealed);
    // Positive control: the same key, purpose and context open it.
    expect(key.open('channel-token', sealed, 'telegram/default')).toBe(token);

    expect(failure(() => keyOf().open('channel-token', sealed, 'telegram/default')).code).toBe('secret_unreadable');
    expect(failure(() => key.open('whatsapp-auth', sealed, 'telegram/default')).code).toBe('secret_unreadable');
    expect(failure(() => key.open('channel-token', sealed, 'slack/default')).code).toBe('secret_unreadable');
    const parts = sealed.split('.');
    const body = Buffer.from(parts[2]!, 'base64url');
    body[0] = body[0]! ^ 1;
    const changed = [parts[0], parts[1], body.toString('base64url'), parts[3]].join('.');
    expect(failure(() => key.open('channel-token', changed, 'telegram/default')).code).toBe('secret_unreadable');
    expect(failure(() => key.open('channel-token', 'not sealed', 'telegram/default')).message).not.toContain('not sealed');
  });

  it('seals bytes as well as text', () => {
    const key = keyOf();
    const bytes = randomBytes(64);
    expect(key.openBytes('whatsapp-auth', key.seal('whatsapp-auth', bytes, 'creds'), 'creds').equals(bytes)).toBe(true);
  });
});
