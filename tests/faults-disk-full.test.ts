/**
 * The disk fills under roster start: its embedded data folder is on a small
 * tmpfs of the test's own, and a file takes the rest of the space while turns
 * go on. Mounting needs root (or the right to mount); where it is refused the
 * test fails and says so, since what it shows cannot be shown without it.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openEmbeddedDatabase } from '@roster/db';
import { clusterTemplateDir } from '@roster/db/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runRoster, signInThrough, startListening } from './support/roster-process.js';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const mountPoint = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-small-disk-'));
let mounted = false;

beforeAll(() => {
  try {
    // Room for the migrated database (about 45 MB, a WAL segment of it) and a little more.
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=96m,mode=0700', 'tmpfs', mountPoint], { stdio: 'pipe' });
    mounted = true;
  } catch (error) {
    const said = String((error as { stderr?: Buffer }).stderr ?? (error as Error).message).trim();
    throw new Error(`This test puts the data folder on a small tmpfs, and mount -t tmpfs was refused (${said}): run it as root, or where mounting a tmpfs is allowed.`);
  }
});
afterAll(() => {
  if (mounted) execFileSync('umount', ['--lazy', mountPoint]);
  fs.rmSync(mountPoint, { recursive: true, force: true });
});

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const filler = () => path.join(mountPoint, 'filler');

/** Write zeros to a file until the disk takes no more, down to its last block. */
function fillTheDisk(): void {
  const handle = fs.openSync(filler(), 'a');
  try {
    for (let size = 1 << 20; size >= 4096; ) {
      try {
        fs.writeSync(handle, Buffer.alloc(size));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
        size /= 2;
      }
    }
  } finally {
    fs.closeSync(handle);
  }
  expect(fs.statfsSync(mountPoint).bavail).toBe(0);
}

/** Wait until no process holds the embedded database in `dir` (its host leaves a moment after its last client). */
async function released(dir: string): Promise<void> {
  const lock = path.join(dir, 'pglite', 'roster.lock');
  for (let waited = 0; fs.existsSync(lock); waited += 100) {
    if (waited > 30_000) throw new Error(`the database in ${dir} is still held`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What the disk-full errors must never say while the folder's data is intact. */
const startAfresh = /aside|afresh|start over|delete the folder|remove the folder/i;

describe('the disk holding the embedded database fills while roster start runs', () => {
  it('answers a turn the disk refused with one line that says to free space, keeps nothing half-written, and answers normally once space is back', async () => {
    const dir = path.join(mountPoint, 'data');
    fs.cpSync(clusterTemplateDir({ migrated: true }), path.join(dir, 'pglite'), { recursive: true, preserveTimestamps: true });
    const env = { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`, REDIS_URL: redisUrl };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    const { roster, address } = await startListening(env);
    cleanups.push(() => roster.child.exitCode === null && roster.child.signalCode === null && roster.child.kill('SIGKILL'));
    const session = await signInThrough(address, env);
    let n = 0;
    const turn = async () => {
      n += 1;
      const said = `remember that locker ${n} holds parcel ${n * 7}`;
      const response = await fetch(`${address}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie: session.cookie, 'x-csrf-token': session.csrfToken },
        body: JSON.stringify({ agent: 'Scout', message: said, id: randomUUID() }),
      });
      const events = (await response.text())
        .split('\n\n')
        .filter((block) => block.trim() !== '')
        .map((block) => ({ event: /^event: (.+)$/m.exec(block)![1]!, data: JSON.parse(/^data: (.+)$/m.exec(block)![1]!) as { text?: string; message?: string; code?: string } }));
      const reply = events.find((part) => part.event === 'turn-end')?.data.text;
      const error = events.find((part) => part.event === 'error')?.data;
      return { n, said, fact: `locker ${n} holds parcel ${n * 7}`, noted: reply === `Noted: locker ${n} holds parcel ${n * 7}`, reply, error };
    };

    const health = async () => {
      const response = await fetch(`${address}/healthz`);
      return { status: response.status, body: (await response.json()) as { ok: boolean; writes: string } };
    };
    const doctorWrites = async () => {
      const doctor = await runRoster(['doctor', '--json'], env);
      return (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; status: string; detail: string }> }).checks.find((check) => check.name === 'writes');
    };

    // Before: turns are answered and remembered, and health says so.
    const before = [await turn(), await turn(), await turn()];
    expect(before.every((result) => result.noted)).toBe(true);
    expect(await health()).toMatchObject({ status: 200, body: { ok: true, writes: 'ok' } });
    expect(await doctorWrites()).toMatchObject({ status: 'ok' });

    // The disk fills: the very next health check says the database cannot write, and so does the doctor.
    fillTheDisk();
    const full = await health();
    expect(full.status).toBe(503);
    expect(full.body.ok).toBe(false);
    expect(full.body.writes).toMatch(/^cannot write: The disk that holds the database is full/);
    expect(await doctorWrites()).toMatchObject({ status: 'fail', detail: expect.stringMatching(/^cannot write: The disk that holds the database is full/) });

    // Turns go on until the database needs room it cannot have (the pages it has keep some turns going first).
    const whileFull: Array<Awaited<ReturnType<typeof turn>>> = [];
    while (whileFull.filter((result) => !result.noted).length < 2) {
      if (whileFull.length === 60) throw new Error('60 turns on a full disk and none was refused');
      whileFull.push(await turn());
    }
    const refused = whileFull.filter((result) => !result.noted);
    for (const result of refused) {
      // Said to the person in one line, as the agent's answer or as the turn's error: the disk is full, free some space.
      const words = result.error === undefined ? result.reply! : `${result.error.code}: ${result.error.message}`;
      expect(words).toMatch(/The disk that holds the database is full: free some space on it, then try again\. Nothing stored before is lost\.$/);
      expect(words).not.toContain('\n');
      expect(words).not.toMatch(startAfresh);
    }

    // Space is back: the same process answers normally again, and health is ok on its next check.
    fs.rmSync(filler());
    expect(await health()).toMatchObject({ status: 200, body: { ok: true, writes: 'ok' } });
    const after = await turn();
    expect(after.noted).toBe(true);
    expect(roster.child.exitCode).toBe(null);

    // Every fact of an answered turn is there, and none of a refused one.
    const noted = [...before, ...whileFull, after].filter((result) => result.noted);
    const listed = await runRoster(['memory', 'list', '--agent', 'Scout', '--person', 'owner', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const facts = (JSON.parse(listed.stdout) as Array<{ content: string }>).map((fact) => fact.content).sort();
    expect(facts).toEqual(noted.map((result) => result.fact).sort());

    // Nothing half-written. Each write is one transaction: a fact with its embedding and its audit event,
    // a reply with its follow-up job; the person's message is stored once, before the agent answers.
    const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
    const written = await database.adminScope('test: what the turns wrote', async (tx) => {
      const one = async (sql: string) => Number((await tx.query<{ n: string }>(sql)).rows[0]!.n);
      return {
        factsWithoutEmbedding: await one(`select count(*) as n from facts f where not exists (select 1 from fact_embeddings e where e.fact_id = f.id)`),
        factsWithoutEvent: await one(`select count(*) as n from facts f where not exists (select 1 from memory_events e where e.target_id = f.id::text)`),
        replies: await one(`select count(*) as n from messages where role = 'agent'`),
        extractJobs: await one(`select count(*) as n from outbox where queue = 'extract'`),
        messages: (await tx.query<{ content: string }>(`select content from messages where role = 'person' order by created_at, id`)).rows.map((row) => row.content),
      };
    });
    await database.close();
    expect(written).toMatchObject({ factsWithoutEmbedding: 0, factsWithoutEvent: 0 });
    expect(written.extractJobs).toBe(written.replies);
    // A turn refused before its message was stored left nothing; every other message is there once.
    const said = [...before, ...whileFull, after].map((result) => result.said);
    expect(written.messages.every((message) => said.includes(message))).toBe(true);
    expect(new Set(written.messages).size).toBe(written.messages.length);
    for (const result of [...before, ...whileFull, after].filter((result) => result.reply !== undefined)) expect(written.messages).toContain(result.said);
    const verified = await runRoster(['audit', 'verify', '--json'], env);
    expect(verified.code, verified.stderr).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true });
    expect(await roster.stop()).toBe(0);

    // Opening the folder on a full disk: one line, what to do, never to start afresh; the same command works once space is back.
    await released(dir);
    fillTheDisk();
    const refusedOpen = await runRoster(['chat', '--agent', 'Scout', 'what do you know about locker 1?'], env);
    expect(refusedOpen.code).toBe(1);
    expect(refusedOpen.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^roster chat: The embedded database in .* could not be opened: .*The disk is full: free some space and run this again\. Nothing in the folder is lost\.$/)]);
    expect(refusedOpen.stderr).not.toMatch(startAfresh);
    fs.rmSync(filler());
    const answered = await runRoster(['chat', '--agent', 'Scout', 'what do you know about locker 1?'], env);
    expect(answered.code, answered.stderr).toBe(0);
    expect(answered.stdout).toContain('- locker 1 holds parcel 7');
  }, 300_000);
});
