import fs from 'node:fs';
import path from 'node:path';
import { openEmbeddedDatabase } from '@roster/db';
import { afterEach, describe, expect, it } from 'vitest';
import { runRoster, tempDataDir } from './support/roster-process.js';

const folders: string[] = [];
afterEach(() => {
  while (folders.length > 0) fs.rmSync(folders.pop()!, { recursive: true, force: true });
});

/** Wait until no process holds the embedded database in `dir` (its host lingers a moment after the last command). */
async function released(dir: string): Promise<void> {
  const lock = path.join(dir, 'pglite', 'roster.lock');
  for (let waited = 0; fs.existsSync(lock); waited += 100) {
    if (waited > 30_000) throw new Error(`the database in ${dir} is still held`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('roster doctor --deep', () => {
  it('reads every table and names one with a damaged page, which plain doctor does not look at', async () => {
    const dir = tempDataDir();
    folders.push(dir);
    const env = { ROSTER_DATA_DIR: dir };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    // The positive control: every page reads.
    const healthy = await runRoster(['doctor', '--deep'], env);
    expect(healthy.stdout).toMatch(/^pages\s+ok\s+read every row of \d+ tables \([\d,]+ rows\)$/m);

    const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
    const file = await database.ownerSession('test: where agents lives', async (session) => (await session.query<{ file: string }>(`select pg_relation_filepath('agents') as file`)).rows[0]!.file);
    await database.close();
    await released(dir);
    // The page header of the table's first block, overwritten as a failing disk might.
    const handle = fs.openSync(path.join(dir, 'pglite', file), 'r+');
    fs.writeSync(handle, Buffer.alloc(24, 0xff), 0, 24, 0);
    fs.closeSync(handle);

    const plain = await runRoster(['doctor'], env);
    expect(plain.stdout).not.toMatch(/^pages/m);
    expect(plain.stdout).toMatch(/^database\s+ok/m);
    const deep = await runRoster(['doctor', '--deep'], env);
    expect(deep.code).toBe(1);
    expect(deep.stdout).toMatch(/^pages\s+fail\s+agents cannot be read: .*invalid page in block 0.* Keep the data folder as it is/m);
    // Nothing was repaired or changed: the page is still as damaged as it was.
    expect((await runRoster(['doctor', '--deep'], env)).code).toBe(1);
  });
});

describe('a damaged page under a chat', () => {
  it('tells the person one plain sentence, and keeps the detail (the relation and block) for the operator’s log', async () => {
    const dir = tempDataDir();
    folders.push(dir);
    const env = { ROSTER_DATA_DIR: dir };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    expect((await runRoster(['chat', '--agent', 'Scout', 'remember that the archive opens at nine'], env)).stdout).toContain('Noted: the archive opens at nine');
    // The positive control: read back while every page reads.
    expect((await runRoster(['chat', '--agent', 'Scout', 'when does the archive open?'], env)).stdout).toContain('The archive opens at nine');

    const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
    const file = await database.ownerSession('test: where facts lives', async (session) => (await session.query<{ file: string }>(`select pg_relation_filepath('facts') as file`)).rows[0]!.file);
    await database.close();
    await released(dir);
    const handle = fs.openSync(path.join(dir, 'pglite', file), 'r+');
    fs.writeSync(handle, Buffer.alloc(24, 0xff), 0, 24, 0);
    fs.closeSync(handle);

    const asked = await runRoster(['chat', '--agent', 'Scout', 'when does the archive open?'], { ...env, LOG_LEVEL: 'error' });
    const said = `${asked.stdout}\n${asked.stderr.split('\n').filter((line) => !line.startsWith('{')).join('\n')}`;
    expect(said).toMatch(/failed inside Roster/);
    expect(said).not.toMatch(/invalid page|base\/\d+|block \d/);
    // The operator's log (JSON lines on standard error) has what Postgres said.
    expect(asked.stderr.split('\n').filter((line) => line.startsWith('{')).join('\n')).toMatch(/invalid page in block 0/);
  });
});
