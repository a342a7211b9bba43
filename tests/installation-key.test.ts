import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runRoster, tempDataDir } from './support/roster-process.js';

const folders: string[] = [];
afterEach(() => {
  while (folders.length > 0) fs.rmSync(folders.pop()!, { recursive: true, force: true });
});

/** Tests that run the real process many times: each start boots Node and the embedded database. */
const manyProcesses = 300_000;

const stderrLines = (result: { stderr: string }) => result.stderr.trim().split('\n');

describe('the installation key, as the roster command uses it', () => {
  it('is made once in the data folder (mode 600), shared by every later process, and ROSTER_SECRET_KEY overrides it', async () => {
    const dir = tempDataDir();
    folders.push(dir);
    const keyFile = path.join(dir, 'secret.key');
    const roster = (args: string[], extra: Record<string, string> = {}) => runRoster(args, { ROSTER_DATA_DIR: dir, ...extra });

    expect(fs.existsSync(keyFile)).toBe(false);
    expect((await roster(['agent', 'add', '--name', 'Scout', '--job', 'finds things'])).code).toBe(0);
    // The first command made the key; the next ones use it.
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    const key = fs.readFileSync(keyFile, 'utf8');
    expect(key).toMatch(/^[0-9a-f]{64}\n$/);
    expect((await roster(['person', 'add', 'Ada'])).code).toBe(0);
    expect((await roster(['chat', '--agent', 'Scout', '--as', 'Ada', 'remember that my locker number is 4417'])).code).toBe(0);
    expect((await roster(['chat', '--agent', 'Scout', '--as', 'Ada', 'forget that my locker number is 4417'])).code).toBe(0);
    expect(fs.readFileSync(keyFile, 'utf8')).toBe(key);

    // Another process verifies what these wrote: the same key.
    const verified = await roster(['audit', 'verify', '--json']);
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, chains: [{ agent: 'Scout', ok: true, unkeyed: 0 }] });

    // ROSTER_SECRET_KEY takes precedence over the file: another key is refused by this database, in one line…
    const other = await roster(['audit', 'verify'], { ROSTER_SECRET_KEY: 'ef'.repeat(32) });
    expect(other.code).toBe(1);
    expect(stderrLines(other)).toEqual([expect.stringMatching(/^roster audit verify: This database is keyed with the installation key [0-9a-f]{16}, but this process holds [0-9a-f]{16} \(from ROSTER_SECRET_KEY\)/)]);
    // …and the file's key, given as ROSTER_SECRET_KEY, is accepted (positive control).
    expect((await roster(['audit', 'verify'], { ROSTER_SECRET_KEY: key.trim() })).code).toBe(0);
    expect(fs.readFileSync(keyFile, 'utf8')).toBe(key);
  }, manyProcesses);

  it('stops in one line, changing nothing, when the key is malformed', async () => {
    const dir = tempDataDir();
    folders.push(dir);
    fs.writeFileSync(path.join(dir, 'secret.key'), 'not a key\n', { mode: 0o600 });
    const file = await runRoster(['agent', 'list'], { ROSTER_DATA_DIR: dir });
    expect(file.code).toBe(1);
    expect(stderrLines(file)).toEqual([expect.stringMatching(/^roster agent list: The installation key file .*secret\.key is malformed: it must hold 64 or more hex digits/)]);
    expect(fs.readFileSync(path.join(dir, 'secret.key'), 'utf8')).toBe('not a key\n');

    const variable = await runRoster(['agent', 'list'], { ROSTER_DATA_DIR: dir, ROSTER_SECRET_KEY: 'too-short-to-be-a-key' });
    expect(variable.code).toBe(1);
    expect(variable.stderr).toMatch(/ROSTER_SECRET_KEY: the value is not valid; expected 64 or more hex digits/);
    expect(variable.stderr).not.toContain('too-short-to-be-a-key');

    // Positive control: with a valid key in the variable, the same folder works.
    const valid = await runRoster(['agent', 'list'], { ROSTER_DATA_DIR: dir, ROSTER_SECRET_KEY: '12'.repeat(32) });
    expect(valid.code).toBe(0);
  }, manyProcesses);
});
