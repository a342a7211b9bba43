import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function dataDir(): string {
  const dir = tempDataDir();
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function start(args: string[], env: Record<string, string>, options: { input?: boolean } = {}): RunningRoster {
  const running = startRoster(args, env, options);
  cleanups.push(() => {
    // An interactive chat ends with its input.
    running.child.stdin?.end();
    return running.stop();
  });
  return running;
}

/** Wait until nothing holds the embedded database folder, so that the next commands race to open it. */
async function folderFree(dir: string): Promise<void> {
  const lock = path.join(dir, 'pglite', 'roster.lock');
  const deadline = Date.now() + 30_000;
  while (fs.existsSync(lock)) {
    if (Date.now() > deadline) throw new Error(`${lock} is still held`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface MemoryList {
  people: Array<{ person: string; facts: Array<{ content: string }> }>;
}

const contents = (list: MemoryList): string[] => list.people.flatMap((person) => person.facts.map((fact) => fact.content)).sort();

/** Each run boots Node, and one of them the embedded database; the machine may be busy. */
const processes = 180_000;

describe('several roster commands at once on the embedded database', () => {
  it('runs five chats and a listing started together on a folder nobody holds, and stores every turn', async () => {
    const dir = dataDir();
    const env = { ROSTER_DATA_DIR: dir };
    expect((await runRoster(['agent', 'add', '--name', 'A', '--job', 'keeps notes'], env)).code).toBe(0);
    await folderFree(dir);

    const items = [1, 2, 3, 4, 5];
    const [listing, ...chats] = await Promise.all([
      runRoster(['memory', 'list', '--agent', 'A', '--json'], env),
      ...items.map((item) => runRoster(['chat', '--agent', 'A', `remember that item ${item} is box ${item * 11}`], env)),
    ]);
    expect(listing!.code, listing!.stderr).toBe(0);
    // Whatever it saw of the chats running beside it, it read a whole list.
    expect(JSON.parse(listing!.stdout)).toMatchObject({ agent: 'A' });
    chats.forEach((chat, index) => {
      expect(chat.code, chat.stderr).toBe(0);
      expect(chat.stdout.trim()).toBe(`Noted: item ${items[index]} is box ${items[index]! * 11}`);
    });

    const after = await runRoster(['memory', 'list', '--agent', 'A', '--json'], env);
    expect(after.code, after.stderr).toBe(0);
    expect(contents(JSON.parse(after.stdout) as MemoryList)).toEqual(items.map((item) => `item ${item} is box ${item * 11}`));
  }, processes);

  it('serves the database with db serve while an interactive chat uses it, and neither cuts the other off', async () => {
    const dir = dataDir();
    const env = { ROSTER_DATA_DIR: dir };
    expect((await runRoster(['agent', 'add', '--name', 'A', '--job', 'keeps notes'], env)).code).toBe(0);

    const chat = start(['chat', '--agent', 'A'], env, { input: true });
    const say = (line: string) => chat.child.stdin!.write(`${line}\n`);
    say('remember that the door is blue');
    await chat.waitForOutput(/^Noted: the door is blue$/m);

    const port = await freePort();
    const served = start(['db', 'serve', '--port', String(port)], env);
    const [connectionString, password] = (await served.waitForOutput(/postgres:\/\/roster:([A-Za-z0-9_-]{24})@\S+/)) as RegExpMatchArray;
    const client = new pg.Client({ connectionString });
    await client.connect();
    const { rows } = await client.query<{ name: string }>('select name from agents');
    await client.end();
    expect(rows.map((row) => row.name)).toEqual(['A']);
    // The password is what lets a client in: without it, refused.
    const stranger = new pg.Client({ connectionString: connectionString!.replace(`:${password}@`, ':not-the-password@') });
    stranger.on('error', () => {});
    expect(await stranger.connect().then(() => 'connected', (error: { code?: string }) => error.code)).toBe('28P01');

    // Other commands work beside both, and the chat goes on while the database is served.
    const listing = await runRoster(['agent', 'list'], env);
    expect(listing.code, listing.stderr).toBe(0);
    expect(listing.stdout).toMatch(/^A\s+offline/);
    say('what do you know about the door?');
    await chat.waitForOutput(/^- the door is blue$/m);

    // db serve ends; the chat still has its database.
    expect(await served.stop()).toBe(0);
    say('remember that the bike is green');
    await chat.waitForOutput(/^Noted: the bike is green$/m);
    const ended = new Promise((resolve) => chat.child.once('exit', resolve));
    chat.child.stdin!.end('\n');
    expect(await ended).toBe(0);

    const after = await runRoster(['memory', 'list', '--agent', 'A', '--json'], env);
    expect(contents(JSON.parse(after.stdout) as MemoryList)).toEqual(['the bike is green', 'the door is blue']);
  }, processes);
});
