import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { connectionFromUrl, createQueues, jobNames, type QueueSet } from '@roster/jobs';
import { judgeSystem } from '@roster/learning';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from './support/fake-openai.js';
import { describeDatabaseFile, scanFolder } from './support/folder-scan.js';
import { endRoster, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';
import { eventually } from './support/eventually.js';

/**
 * Forget reaches the disk after the learning loop has run over the words.
 * A fact, corrected twice in chat, becomes learning events, mirror cases and
 * judged runs, a proposed lesson and (a person approving it) an active one;
 * then the vacuum job runs ANALYZE, which copies sampled column values
 * (whole sentences) into pg_statistic, and checkpoints. The fact is forgotten
 * in chat and the erase job runs. Every process is then stopped and every
 * byte of every file of the data folder is scanned: the forgotten word must be
 * in none of them. Positive controls: the word is on disk after the forget and
 * before the erase, and a fact told after the vacuum and never forgotten is
 * still on disk (and recalled) after it.
 *
 * Everything goes through the `roster` command as a person runs it; the only
 * fake is the judge model on the far side of the network.
 */

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A word only the forgotten fact (and what the loop made of it) holds; no digits and no "code" or "PIN", so no secret redaction takes it out first. */
const forgottenWord = 'Zephyrlocker';
const firstSaid = `my gym locker is in the ${forgottenWord} hall by the kiwi door`;
const correctedOnce = `my gym locker is in the ${forgottenWord} hall by the mango door`;
// The same content words as correctedOnce (only a stopword differs): review groups the two corrections into one lesson.
const correctedTwice = `the gym locker is in the ${forgottenWord} hall by the mango door`;
/** A word only the fact that stays holds. */
const keptWord = 'Brambleotter';
const keptFact = `my kayak is named ${keptWord}`;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** About twenty-five runs of the real process, each booting Node and the embedded database, two of them workers: room for a busy machine. */
const manyProcesses = 600_000;

interface MirrorCaseView {
  text: string;
  history: Array<{ verdict: string; reason: string }>;
}
interface ApprovalView {
  id: string;
  status: string;
  text: string;
  proposedByKind: string;
  evidence: unknown[];
}
interface LessonView {
  status: string;
  text: string;
}

describe('forgetting on the embedded database after the learning loop and a vacuum', () => {
  it('takes the words off every file of the data folder, pg_statistic and the WAL included, and keeps what was not forgotten', { timeout: manyProcesses }, async () => {
    // The judge: strict JSON verdicts, as the mirror requires. Its reason repeats the corrected words, as a model's does.
    const judged: string[] = [];
    const stray: string[] = [];
    const fake = await startFakeOpenAi((request) => {
      if (request.system.some((text) => text.includes(judgeSystem))) {
        judged.push(JSON.stringify(request.messages));
        return { text: JSON.stringify({ verdict: 'pass', reason: `the answer keeps to the ${forgottenWord} hall` }) };
      }
      // One person's corrections need no paraphrase: any other request means the loop took a road this test did not arrange.
      stray.push(request.system.join('\n'));
      return { text: '{"lesson": ""}' };
    });
    cleanups.push(() => fake.close());

    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const prefix = `test-${randomUUID()}`;
    const queues: QueueSet = createQueues(connectionFromUrl(redisUrl), prefix);
    cleanups.push(async () => {
      for (const name of jobNames) await queues.queues[name].obliterate({ force: true });
      await queues.close();
    });
    const env = {
      ROSTER_DATA_DIR: dir,
      REDIS_URL: redisUrl,
      ROSTER_QUEUE_PREFIX: prefix,
      ROSTER_JUDGE_ENGINE: fake.engine,
      // The nightly jobs (harvest, review, mirror) at an hour far from now: only the runs this test asks for happen.
      ROSTER_TIMEZONE: 'UTC',
      ROSTER_NIGHTLY_HOUR: String((new Date().getUTCHours() + 12) % 24),
    };
    const roster = async (...args: string[]) => {
      const result = await runRoster(args, env, 120_000);
      expect(result.code, `roster ${args.join(' ')}\n${result.stdout}\n${result.stderr}`).toBe(0);
      return result.stdout.trim();
    };
    const json = async <T>(...args: string[]) => JSON.parse(await roster(...args)) as T;
    const job = async (name: string) => (await json<{ job: string; result: Record<string, unknown> }>('jobs', 'run', name, '--wait', '--json')).result;
    const chat = (text: string) => roster('chat', '--agent', 'Scout', '--as', 'Ada', text);
    const startWorker = async (): Promise<RunningRoster> => {
      const worker = startRoster(['worker'], env);
      cleanups.push(() => endRoster(worker));
      await worker.waitForOutput(/worker is running/);
      return worker;
    };

    // 1. Scout, on the offline engine; Ada, an owner; a fact and two corrections of it.
    await roster('agent', 'add', '--name', 'Scout', '--job', 'keeps notes');
    await roster('person', 'add', 'Ada', '--role', 'owner');
    expect(await chat(`remember that ${firstSaid}`)).toBe(`Noted: ${firstSaid.replace(/^my /, 'your ')}`);
    expect(await chat(`actually, ${correctedOnce}`)).toBe(`Corrected: ${correctedOnce.replace(/^my /, 'your ')}`);
    expect(await chat(`actually, ${correctedTwice}`)).toBe(`Corrected: ${correctedTwice.replace(/^my /, 'your ')}`);

    // 2. The loop, each job run by hand through a worker, each checked for what it made.
    let worker = await startWorker();
    // The turns queued harvests of their own, which the worker relays; whichever runs first, the cases are made once.
    await job('harvest');
    const harvested = await json<{ total: number; cases: MirrorCaseView[] }>('mirror', 'report', '--agent', 'Scout', '--json');
    expect(harvested.cases.map((item) => item.text).sort()).toEqual([`actually, ${correctedOnce}`, `actually, ${correctedTwice}`]);

    expect(await job('mirror')).toMatchObject({ replayed: 2, passed: 2, failed: 0, errors: 0 });
    const mirrored = await json<{ cases: MirrorCaseView[] }>('mirror', 'report', '--agent', 'Scout', '--json');
    expect(mirrored.cases.map((item) => item.history.map((run) => `${run.verdict}: ${run.reason}`))).toEqual([
      [`pass: the answer keeps to the ${forgottenWord} hall`],
      [`pass: the answer keeps to the ${forgottenWord} hall`],
    ]);
    // The judge read the corrections themselves.
    expect(judged).toHaveLength(2);
    expect(judged.join('\n')).toContain(forgottenWord);

    expect(await job('review')).toMatchObject({ proposed: 1 });
    const pending = await json<ApprovalView[]>('approvals', '--agent', 'Scout', '--json');
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ status: 'pending', proposedByKind: 'job', evidence: [expect.any(Object), expect.any(Object)] });
    expect(pending[0]!.text).toContain(forgottenWord);
    expect(await roster('approvals', 'approve', pending[0]!.id, '--as', 'Ada')).toMatch(/^Approved by Ada: lesson \S+ \(version 1\)/);
    const approved = await json<LessonView[]>('lessons', 'list', '--agent', 'Scout', '--json');
    expect(approved).toEqual([expect.objectContaining({ status: 'active', text: pending[0]!.text })]);
    expect(stray).toEqual([]);

    // 3. The vacuum: VACUUM (ANALYZE) of every table as its owner, then a checkpoint.
    expect(await job('vacuum')).toMatchObject({ database: 'embedded', tables: expect.any(Number), checkpoint: true });
    expect(await worker.stop()).toBe(0);
    // No process runs: where the word is now, analysed and checkpointed, before any forget.
    const afterVacuum = scanFolder(dir, forgottenWord);
    expect(afterVacuum.files.length).toBeGreaterThan(0);

    // 4. A fact told after the vacuum and never forgotten.
    expect(await chat(`remember that ${keptFact}`)).toBe(`Noted: ${keptFact.replace(/^my /, 'your ')}`);

    // 5. The forget, in chat; it reaches the lesson, the approval and the mirror cases at once.
    expect(await chat(`forget that ${correctedTwice}`)).toBe('Forgotten.');
    const retired = await json<LessonView[]>('lessons', 'list', '--agent', 'Scout', '--json');
    expect(retired).toEqual([expect.objectContaining({ status: 'retired' })]);
    expect(JSON.stringify(retired).toLowerCase()).not.toContain(forgottenWord.toLowerCase());
    const reported = await roster('mirror', 'report', '--agent', 'Scout', '--json');
    expect(reported.toLowerCase()).not.toContain(forgottenWord.toLowerCase());
    const decided = await roster('approvals', '--all', '--agent', 'Scout', '--json');
    expect(decided.toLowerCase()).not.toContain(forgottenWord.toLowerCase());

    // Positive control: no process runs, no erase has, and the forgotten word is still in the files.
    const beforeErase = scanFolder(dir, forgottenWord);
    expect(beforeErase.files.length).toBeGreaterThan(0);
    expect(scanFolder(dir, keptWord).files.length).toBeGreaterThan(0);

    // A worker relays the erase the forget queued, and runs it; then one more by hand.
    worker = await startWorker();
    const relayed = await eventually(async () => {
      const jobs = await queues.queues.erase.getJobs(['completed', 'failed']);
      const found = jobs.find((item) => item.name === 'erase-forgotten');
      if (found !== undefined && (await found.getState()) === 'failed') throw new Error(`the queued erase failed: ${found.failedReason}`);
      return found;
    }, 'the erase a forget queued to run', 60_000);
    expect(relayed.returnvalue).toMatchObject({ database: 'embedded' });
    expect(await job('erase')).toMatchObject({ database: 'embedded', queued: 0 });
    expect(await worker.stop()).toBe(0);

    // 6. Every process has stopped: what is in the files now is all there is.
    const afterErase = scanFolder(dir, forgottenWord);
    expect(afterErase.bytes).toBeGreaterThan(1_000_000);
    expect(
      afterErase.files.map(describeDatabaseFile),
      `"${forgottenWord}" is still on disk after the erase; after the vacuum, before the forget, it was in: ${afterVacuum.files.map(describeDatabaseFile).join(', ')}`,
    ).toEqual([]);
    // Negative control: the fact that was not forgotten is still in the files, and still recalled.
    expect(scanFolder(dir, keptWord).files.length).toBeGreaterThan(0);
    expect(await chat('what do you know about my gym locker')).toBe("I don't know anything about your gym locker yet.");
    const recalled = (await chat('what do you know about my kayak')).split('\n');
    expect(recalled).toContain(`- ${keptFact.replace(/^my /, 'your ')}`);
    expect(recalled.join('\n').toLowerCase()).not.toContain(forgottenWord.toLowerCase());
  });
});
