import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { connectionFromUrl, createQueues, jobNames, type QueueSet } from '@roster/jobs';
import { afterEach, describe, expect, it } from 'vitest';
import { scanFolder } from './support/folder-scan.js';
import { runRoster, startRoster, tempDataDir } from './support/roster-process.js';
import { eventually } from './support/eventually.js';

/**
 * Forget reaches the disk. A forget empties rows, but on the embedded
 * database their old versions stay in the files of the data folder (dead
 * rows in table and index pages, the WAL) until the erase job rewrites them.
 * Everything goes through the `roster` command as a person runs it: two facts
 * told in chat, the vacuum job's ANALYZE (the planner samples column values
 * into pg_statistic), one fact forgotten in chat, a worker, `roster jobs run
 * erase --wait`. Then every process is stopped and every byte of every file of the
 * data folder is scanned. The scan after the forget and before any erase is
 * the positive control (the words are there); the other fact is the negative
 * one (still on disk after the erase, and still recalled).
 */

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A word only the forgotten fact holds; its full-text lexeme is the word itself, lower-cased. */
const forgottenWord = 'Zephyrquokka';
const forgottenFact = `my favourite cafe is ${forgottenWord} Roasters`;
/** A word only the fact that stays holds. */
const keptWord = 'Marzipanwombat';
const keptFact = `my bicycle is named ${keptWord}`;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** Eleven runs of the real process, each booting Node and the embedded database (about 35 s on an idle machine): room for a busy one. */
const manyProcesses = 180_000;

describe('forgetting on the embedded database', () => {
  it('takes the words off every file of the data folder once the erase has run, and keeps what was not forgotten', { timeout: manyProcesses }, async () => {
    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const prefix = `test-${randomUUID()}`;
    const queues: QueueSet = createQueues(connectionFromUrl(redisUrl), prefix);
    cleanups.push(async () => {
      for (const name of jobNames) await queues.queues[name].obliterate({ force: true });
      await queues.close();
    });
    const env = { ROSTER_DATA_DIR: dir, REDIS_URL: redisUrl, ROSTER_QUEUE_PREFIX: prefix };
    const roster = async (...args: string[]) => {
      const result = await runRoster(args, env);
      expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(0);
      return result.stdout.trim();
    };

    await roster('agent', 'add', '--name', 'Scout', '--job', 'keeps notes');
    expect(await roster('chat', '--agent', 'Scout', `remember that ${forgottenFact}`)).toBe(`Noted: ${forgottenFact.replace(/^my /, 'your ')}`);
    expect(await roster('chat', '--agent', 'Scout', `remember that ${keptFact}`)).toBe(`Noted: ${keptFact.replace(/^my /, 'your ')}`);
    // A reply that repeats the words: one more copy for the forget to reach.
    expect((await roster('chat', '--agent', 'Scout', 'what do you know about cafe')).split('\n')).toContain(`- ${forgottenFact.replace(/^my /, 'your ')}`);

    // The vacuum job runs ANALYZE as the tables' owner while the words are live: the planner samples every column it keeps statistics on.
    const analyser = startRoster(['worker'], env);
    cleanups.push(async () => {
      if (analyser.child.exitCode === null && analyser.child.signalCode === null) analyser.child.kill('SIGKILL');
      await analyser.stop();
    });
    await analyser.waitForOutput(/worker is running/);
    const vacuumed = JSON.parse(await roster('jobs', 'run', 'vacuum', '--wait', '--json')) as { result: { database: string; tables: number } };
    expect(vacuumed.result).toMatchObject({ database: 'embedded', tables: expect.any(Number) });
    expect(vacuumed.result.tables).toBeGreaterThan(10);
    expect(await analyser.stop()).toBe(0);

    expect(await roster('chat', '--agent', 'Scout', `forget that ${forgottenFact}`)).toBe('Forgotten.');

    // Positive control: no process runs, no erase has, and the forgotten words are still in the files.
    const beforeErase = scanFolder(dir, forgottenWord);
    expect(beforeErase.files.length).toBeGreaterThan(0);
    expect(beforeErase.files.some((file) => file.startsWith(path.join('pglite', 'pg_wal')))).toBe(true);
    expect(scanFolder(dir, keptWord).files.length).toBeGreaterThan(0);

    // A worker relays the erase the forget queued, and runs it.
    const worker = startRoster(['worker'], env);
    cleanups.push(async () => {
      if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
      await worker.stop();
    });
    await worker.waitForOutput(/worker is running/);
    const queued = await eventually(async () => {
      const [job] = await queues.queues.erase.getJobs(['completed', 'failed']);
      if (job !== undefined && (await job.getState()) === 'failed') throw new Error(`the queued erase failed: ${job.failedReason}`);
      return job;
    }, 'the erase a forget queued to run');
    expect(queued.name).toBe('erase-forgotten');
    expect(queued.data).toEqual({ tables: expect.arrayContaining(['facts', 'fact_embeddings', 'messages', 'learning_events']) });
    expect(queued.returnvalue).toMatchObject({ database: 'embedded', queued: 1, ignored: [], walSegmentsRemoved: expect.any(Number) });
    expect(queued.returnvalue.tables).toEqual(expect.arrayContaining(['facts', 'messages', 'learning_events']));

    // And by hand: every table that holds people's words.
    const byHand = await runRoster(['jobs', 'run', 'erase', '--wait', '--json'], env);
    expect(byHand.code, byHand.stderr).toBe(0);
    const ran = JSON.parse(byHand.stdout) as { job: string; result: { database: string; tables: string[]; queued: number; walSegmentsRemoved: number } };
    expect(ran).toMatchObject({ job: 'erase', result: { database: 'embedded', queued: 0 } });
    expect(ran.result.tables).toEqual(expect.arrayContaining(['facts', 'fact_embeddings', 'messages', 'learning_events', 'episodes', 'lessons', 'approvals', 'mirror_cases', 'mirror_runs', 'outbox']));
    expect(ran.result.walSegmentsRemoved).toBeGreaterThanOrEqual(1);
    // What the jobs left in Redis names tables and counts, never the words.
    for (const text of [JSON.stringify(queued.data), JSON.stringify(queued.returnvalue), byHand.stdout]) {
      expect(text.toLowerCase()).not.toContain(forgottenWord.toLowerCase());
    }
    expect(await worker.stop()).toBe(0);

    // Every process has stopped: what is in the files now is all there is.
    const afterErase = scanFolder(dir, forgottenWord);
    expect(afterErase.bytes).toBeGreaterThan(1_000_000);
    expect(afterErase.files).toEqual([]);
    // Negative control: the fact that was not forgotten is still in the files, and still recalled.
    expect(scanFolder(dir, keptWord).files.length).toBeGreaterThan(0);
    expect(await roster('chat', '--agent', 'Scout', 'what do you know about my favourite cafe')).toBe("I don't know anything about your favourite cafe yet.");
    const recalled = (await roster('chat', '--agent', 'Scout', 'what do you know about my bicycle')).split('\n');
    expect(recalled).toContain(`- ${keptFact.replace(/^my /, 'your ')}`);
    expect(recalled.join('\n').toLowerCase()).not.toContain(forgottenWord.toLowerCase());

    // erase works on the whole database: it refuses an agent.
    const refused = await runRoster(['jobs', 'run', 'erase', '--agent', 'Scout'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('erase works on the whole database');
  });
});
