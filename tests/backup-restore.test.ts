import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectionFromUrl, createQueues } from '@roster/jobs';
import { readBackupHeader, restoreReplayingForgets, type BackupHeader } from './support/backup-file.js';
import { dropQueueKeys } from './support/installation.js';
import { endRoster, freePort, runRoster, startRoster, tempDataDir } from './support/roster-process.js';

/** Backups through the built CLI: taken while `roster start` runs, restored into new folders, refused when they must be. */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** Many CLI runs and a start, each booting Node and the embedded database, on a busy machine. */
const processes = 600_000;

const newKey = () => randomBytes(32).toString('hex');
/** The lines a command wrote for people, without the JSON log lines. */
const said = (stderr: string) => stderr.trim().split('\n').filter((line) => line !== '' && !line.startsWith('{'));
/** A folder's entries, deep, for "nothing changed". */
const entries = (folder: string): string[] => (fs.existsSync(folder) ? (fs.readdirSync(folder, { recursive: true }) as string[]).sort() : []);

function folder(): string {
  const dir = tempDataDir({ fresh: true });
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('roster backup and roster restore', () => {
  it('backs up while roster start runs and a chat happens; restores into a new folder whose audit verifies against the heads and whose facts are there; a later forget stays forgotten only with --replay-forgets-from; the nightly job keeps N', async () => {
    const key = newKey();
    const source = tempDataDir();
    cleanups.push(() => fs.rmSync(source, { recursive: true, force: true }));
    const prefix = `test-${path.basename(source)}`;
    cleanups.push(() => dropQueueKeys(prefix));
    const nightly = path.join(source, 'nightly');
    const env = { ROSTER_DATA_DIR: source, ROSTER_SECRET_KEY: key, ROSTER_QUEUE_PREFIX: prefix, REDIS_URL: redisUrl, PORT: String(await freePort()) };
    const roster = async (environment: Record<string, string>, ...args: string[]) => {
      const result = await runRoster(args, environment, 120_000);
      expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(0);
      return result.stdout.trim();
    };
    await roster(env, 'agent', 'add', '--name', 'Scout', '--job', 'finds things');
    await roster(env, 'person', 'add', 'ada');
    await roster(env, 'chat', '--agent', 'Scout', '--as', 'ada', 'remember that my bike is teal');
    await roster(env, 'chat', '--agent', 'Scout', '--as', 'ada', 'remember that my favourite tea is oolong');

    const started = startRoster(['start'], { ...env, ROSTER_BACKUP_DIR: nightly, ROSTER_BACKUP_KEEP: '2' });
    cleanups.push(() => endRoster(started));
    await started.waitForOutput(/running at/);

    // The backup is taken while a chat runs beside it.
    const file = path.join(source, 'one.backup');
    const [backup] = await Promise.all([
      roster(env, 'backup', '--out', file, '--json'),
      roster(env, 'chat', '--agent', 'Scout', '--as', 'ada', 'remember that my kite is red'),
    ]);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const header = readBackupHeader(file);
    expect(JSON.parse(backup)).toMatchObject({ file, sealed: true, database: 'embedded' });
    expect(header).toMatchObject({ format: 'roster-backup', database: 'embedded', sealed: true, schemaVersion: fs.readdirSync(new URL('../migrations/', import.meta.url)).length });
    expect(header.keyFingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(header.tookMs).toBeGreaterThanOrEqual(0);
    expect(header.heads.map((head) => head.agent)).toEqual(['Scout']);
    // Sealed: none of ada's words is in the file as written.
    const bytes = fs.readFileSync(file).toString('latin1');
    for (const word of ['teal', 'oolong', 'favourite tea']) expect(bytes).not.toContain(word);

    // After the backup, ada's favourite tea is forgotten on the running installation.
    const facts = JSON.parse(await roster(env, 'memory', 'list', '--agent', 'Scout', '--person', 'ada', '--json')) as Array<{ id: string; content: string }>;
    const tea = facts.find((fact) => fact.content === 'my favourite tea is oolong')!;
    expect(tea).toBeDefined();
    await roster(env, 'memory', 'forget', '--agent', 'Scout', '--fact', tea.id);

    const contentsOf = async (environment: Record<string, string>) =>
      (JSON.parse(await roster(environment, 'memory', 'list', '--agent', 'Scout', '--person', 'ada', '--json')) as Array<{ content: string }>).map((fact) => fact.content).sort();

    // Restored with the newer database's tombstones: the bike is there (positive control), the tea is not.
    const replayed = { ROSTER_DATA_DIR: folder(), ROSTER_SECRET_KEY: key, ROSTER_QUEUE_PREFIX: prefix, REDIS_URL: redisUrl };
    const doctor = await restoreReplayingForgets(replayed, file, source, header.heads[0]!.head, { kept: 'my bike is teal', forgotten: 'my favourite tea is oolong' });
    expect(doctor).toMatch(/^pages\s+ok/m);

    // Restored without them: the forgotten fact comes back, which is what the option is for.
    const plain = { ROSTER_DATA_DIR: folder(), ROSTER_SECRET_KEY: key };
    await roster(plain, 'restore', file);
    expect(await contentsOf(plain)).toContain('my favourite tea is oolong');
    expect((await runRoster(['audit', 'verify', '--agent', 'Scout', '--expect', header.heads[0]!.head], plain)).code).toBe(0);

    // The nightly job on the running worker: scheduled, shown with the other queues, and it keeps the newest two.
    const queues = createQueues(connectionFromUrl(redisUrl), prefix);
    try {
      expect(await queues.queues.backup.getJobScheduler('nightly-backup')).toMatchObject({ pattern: expect.stringMatching(/^40 \d+ \* \* \*$/) });
    } finally {
      await queues.close();
    }
    for (let run = 0; run < 3; run += 1) {
      const result = JSON.parse(await roster(env, 'jobs', 'run', 'backup', '--wait', '--json')) as { result: { file: string; removed: number } };
      expect(result.result.removed).toBe(run < 2 ? 0 : 1);
    }
    const written = fs.readdirSync(nightly);
    expect(written).toHaveLength(2);
    for (const name of written) {
      expect(name).toMatch(/^roster-\d{8}T\d{9}Z\.backup$/);
      expect(fs.statSync(path.join(nightly, name)).mode & 0o777).toBe(0o600);
      expect(readBackupHeader(path.join(nightly, name)).sealed).toBe(true);
    }
  }, processes);

  it('refuses a non-empty target, another key, a newer schema and a changed file, each in one line, changing nothing', async () => {
    const key = newKey();
    const source = tempDataDir();
    cleanups.push(() => fs.rmSync(source, { recursive: true, force: true }));
    const env = { ROSTER_DATA_DIR: source, ROSTER_SECRET_KEY: key };
    const roster = async (...args: string[]) => {
      const result = await runRoster(args, env, 120_000);
      expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(0);
      return result.stdout;
    };
    await roster('agent', 'add', '--name', 'Scout', '--job', 'finds things');
    await roster('chat', '--agent', 'Scout', 'remember that the bike is teal');
    const sealed = path.join(source, 'sealed.backup');
    await roster('backup', '--out', sealed);
    const plainFile = path.join(source, 'plain.backup');
    expect(await roster('backup', '--out', plainFile, '--plain')).toContain('NOT sealed (--plain): anyone who can read this file reads every word in it.');
    expect(readBackupHeader(plainFile)).toMatchObject({ sealed: false });
    expect(fs.statSync(plainFile).mode & 0o777).toBe(0o600);

    const refused = async (environment: Record<string, string>, file: string, line: RegExp) => {
      const target = environment.ROSTER_DATA_DIR!;
      const before = entries(target);
      const result = await runRoster(['restore', file], environment, 120_000);
      expect(result.code, result.stdout).toBe(1);
      const lines = said(result.stderr);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(line);
      expect(entries(target)).toEqual(before);
    };
    // The control: the same file restores into an empty folder with the same key.
    const empty = { ROSTER_DATA_DIR: folder(), ROSTER_SECRET_KEY: key };
    expect((await runRoster(['restore', sealed], empty, 120_000)).code).toBe(0);

    // Not empty: the source itself, which still holds its fact afterwards.
    await refused(env, sealed, /^roster restore: The data folder .* already holds a database .*: restore into a new, empty data folder\.$/);
    expect(await roster('memory', 'list', '--agent', 'Scout')).toContain('the bike is teal');
    // Another key, sealed or plain.
    const otherKey = { ROSTER_DATA_DIR: folder(), ROSTER_SECRET_KEY: newKey() };
    await refused(otherKey, sealed, /^roster restore: The backup .* was sealed with another installation key \(fingerprint [0-9a-f]{16}; this one is [0-9a-f]{16}\)/);
    await refused(otherKey, plainFile, /^roster restore: The backup .* was taken with another installation key/);
    // No key at all here: none is made up.
    const keyless = { ROSTER_DATA_DIR: folder() };
    await refused(keyless, sealed, /^roster restore: No installation key here: copy secret\.key from the installation the backup came from/);
    // A newer schema (the plain file's header, which nothing seals, says so).
    const newer = path.join(source, 'newer.backup');
    const text = fs.readFileSync(plainFile);
    const cut = text.indexOf(0x0a, text.indexOf(0x0a) + 1);
    const headerLine = JSON.parse(text.subarray(text.indexOf(0x0a) + 1, cut).toString('utf8')) as BackupHeader;
    fs.writeFileSync(newer, Buffer.concat([Buffer.from(`ROSTER-BACKUP 1\n${JSON.stringify({ ...headerLine, schemaVersion: 9999 })}`), text.subarray(cut)]));
    const fresh = { ROSTER_DATA_DIR: folder(), ROSTER_SECRET_KEY: key };
    await refused(fresh, newer, /^roster restore: The backup .* has schema version 9999, newer than this Roster knows \(\d+\)/);
    // One byte changed in the sealed body, or in its header.
    const changed = path.join(source, 'changed.backup');
    const original = fs.readFileSync(sealed);
    const body = Buffer.from(original);
    body[body.length - 100] = body[body.length - 100]! ^ 0x01;
    fs.writeFileSync(changed, body);
    await refused(fresh, changed, /^roster restore: The backup .* was changed or cut short after it was written/);
    const header = Buffer.from(original.toString('latin1').replace('"tookMs":', '"tookMs":1'), 'latin1');
    fs.writeFileSync(changed, header);
    await refused(fresh, changed, /^roster restore: The backup .* was changed or cut short after it was written/);
    // A file that is not a backup at all.
    fs.writeFileSync(changed, 'hello\n');
    await refused(fresh, changed, /is not a Roster backup/);
    // An existing --out is never overwritten.
    const exists = await runRoster(['backup', '--out', sealed], env, 120_000);
    expect(exists.code).toBe(1);
    expect(fs.readFileSync(sealed).equals(original)).toBe(true);
  }, processes);
});
