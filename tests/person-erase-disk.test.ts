import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { connectionFromUrl, createQueues, jobNames, type QueueSet } from '@roster/jobs';
import { afterEach, describe, expect, it } from 'vitest';
import { describeDatabaseFile, scanFolder } from './support/folder-scan.js';
import { runRoster, startRoster, tempDataDir } from './support/roster-process.js';

/**
 * A person's erasure reaches the disk. Ada (the owner) and Bob each tell
 * Scout and Coder something through `roster chat`; the vacuum job runs
 * ANALYZE (the planner samples column values into pg_statistic) and
 * checkpoints; `roster person forget Bob --yes`; a worker runs the erase job
 * the erasure queued. Every process is then stopped and every byte of every
 * file of the data folder is scanned. The scan after the erasure and before
 * the erase job is the positive control (his words are still in the files);
 * Ada's facts are the other (still on disk after the erase, and recalled).
 * Bad input first: an unknown person, or no confirmation, changes nothing.
 */

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Words only Bob said, one to each agent; and one only Ada said. */
const bobWords = ['Zephyrmoose', 'Quillbadger'];
const adaWord = 'Brambleotter';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** About twenty runs of the real process, each booting Node and the embedded database, two of them workers: room for a busy machine. */
const manyProcesses = 600_000;

describe('erasing a person on the embedded database', () => {
  it('takes their words off every file of the data folder once the erase has run, and keeps the other person’s', { timeout: manyProcesses }, async () => {
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
      const result = await runRoster(args, env, 120_000);
      expect(result.code, `roster ${args.join(' ')}\n${result.stdout}\n${result.stderr}`).toBe(0);
      return result.stdout.trim();
    };
    const chat = (agent: string, person: string, text: string) => roster('chat', '--agent', agent, '--as', person, text);
    const failure = (result: { stderr: string }) => result.stderr.trim().split('\n').filter((line) => !line.startsWith('{'));
    const startWorker = async () => {
      const worker = startRoster(['worker'], env);
      cleanups.push(async () => {
        if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
        await worker.stop();
      });
      await worker.waitForOutput(/worker is running/);
      return worker;
    };

    await roster('agent', 'add', '--name', 'Scout', '--job', 'keeps notes');
    await roster('agent', 'add', '--name', 'Coder', '--job', 'writes code');
    await roster('person', 'add', 'Ada', '--role', 'owner');
    await roster('person', 'add', 'Bob');
    expect(await chat('Scout', 'Ada', `remember that my kayak is named ${adaWord}`)).toBe(`Noted: your kayak is named ${adaWord}`);
    expect(await chat('Scout', 'Bob', `remember that my dog is named ${bobWords[0]}`)).toBe(`Noted: your dog is named ${bobWords[0]}`);
    expect(await chat('Coder', 'Bob', `remember that my laptop is called ${bobWords[1]}`)).toBe(`Noted: your laptop is called ${bobWords[1]}`);

    // The vacuum job runs ANALYZE as the tables' owner while the words are live, and checkpoints.
    let worker = await startWorker();
    const vacuumed = JSON.parse(await roster('jobs', 'run', 'vacuum', '--wait', '--json')) as { result: { database: string } };
    expect(vacuumed.result).toMatchObject({ database: 'embedded' });
    expect(await worker.stop()).toBe(0);
    const afterVacuum = bobWords.flatMap((word) => scanFolder(dir, word).files);
    expect(afterVacuum.length).toBeGreaterThan(0);

    // Bad input changes nothing: an unknown person (one line, exit 1), no confirmation off a terminal (exit 2), the wrong name (exit 1).
    const unknown = await runRoster(['person', 'forget', 'Nobody', '--yes'], env);
    expect(unknown.code).toBe(1);
    expect(failure(unknown)).toEqual(['roster person forget: No person named "Nobody". roster person add Nobody adds one.']);
    const unconfirmed = await runRoster(['person', 'forget', 'Bob'], env);
    expect(unconfirmed.code).toBe(2);
    expect(failure(unconfirmed)).toEqual(['roster person forget: Erasing cannot be undone: confirm with --confirm Bob or --yes. `roster person forget --help` shows the usage.']);
    const misnamed = await runRoster(['person', 'forget', 'Bob', '--confirm', 'Rob'], env);
    expect(misnamed.code).toBe(1);
    expect(failure(misnamed)).toEqual(['roster person forget: To erase everything Roster holds about Bob, confirm with their name: --confirm Bob (or --yes).']);
    const onlyOwner = await runRoster(['person', 'forget', 'Ada', '--yes'], env);
    expect(onlyOwner.code).toBe(1);
    expect(failure(onlyOwner)).toEqual(['roster person forget: Ada is the only owner: add another owner first (roster person add NAME --role owner), then erase Ada.']);
    expect(await chat('Coder', 'Bob', 'what do you know about my laptop')).toBe(`- your laptop is called ${bobWords[1]}`);

    const erased = await roster('person', 'forget', 'Bob', '--yes');
    expect(erased).toMatch(/^Erased Bob: 2 facts forgotten, each leaving a keyed tombstone; erased /);
    expect(erased).toContain("in 2 agents’ audit chains");
    expect(JSON.parse(await roster('person', 'list', '--json'))).toEqual([expect.objectContaining({ name: 'Ada' })]);
    const gone = await runRoster(['chat', '--agent', 'Scout', '--as', 'Bob', 'hello'], env);
    expect(gone.code).toBe(1);

    // Positive control: no process runs, no erase has, and his words are still in the files.
    expect(bobWords.flatMap((word) => scanFolder(dir, word).files).length).toBeGreaterThan(0);

    // A worker relays the erase the erasure queued, and runs it.
    worker = await startWorker();
    const relayed = await eventually(async () => {
      const jobs = await queues.queues.erase.getJobs(['completed', 'failed']);
      const found = jobs.find((item) => item.name === 'erase-forgotten' && Array.isArray(item.data.tables) && item.data.tables.includes('identities'));
      if (found !== undefined && (await found.getState()) === 'failed') throw new Error(`the queued erase failed: ${found.failedReason}`);
      return found;
    }, 'the erase the erasure queued to run');
    expect(relayed.returnvalue).toMatchObject({ database: 'embedded' });
    expect(relayed.returnvalue.tables).toEqual(expect.arrayContaining(['facts', 'messages', 'people', 'identities']));
    expect(await worker.stop()).toBe(0);

    // Every process has stopped: what is in the files now is all there is.
    for (const word of bobWords) {
      const after = scanFolder(dir, word);
      expect(after.bytes).toBeGreaterThan(1_000_000);
      expect(after.files.map(describeDatabaseFile), `"${word}" is still on disk after the erase; after the vacuum it was in: ${afterVacuum.map(describeDatabaseFile).join(', ')}`).toEqual([]);
    }
    // Ada's fact is still in the files, and still recalled.
    expect(scanFolder(dir, adaWord).files.length).toBeGreaterThan(0);
    expect((await chat('Scout', 'Ada', 'what do you know about my kayak')).split('\n')).toContain(`- your kayak is named ${adaWord}`);
  });
});
