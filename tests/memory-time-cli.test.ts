import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runRoster, tempDataDir } from './support/roster-process.js';

const folders: string[] = [];
afterEach(() => {
  while (folders.length > 0) fs.rmSync(folders.pop()!, { recursive: true, force: true });
});

interface ListedFact {
  id: string;
  content: string;
  validFrom: string;
  validTo: string | null;
  recordedAt: string;
  supersededAt: string | null;
}

/** Fourteen runs, each booting Node and the embedded database. */
const processes = 600_000;

describe('roster memory list in valid and record time', () => {
  it('shows what the agent believed at a time with --recorded-at, before and after an update', async () => {
    const dir = tempDataDir();
    folders.push(dir);
    const roster = async (...args: string[]) => {
      const result = await runRoster(args, { ROSTER_DATA_DIR: dir });
      expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(0);
      return result.stdout.trim();
    };
    const list = async (...times: string[]) =>
      JSON.parse(await roster('memory', 'list', '--agent', 'Scout', '--person', 'Ada', ...times, '--json')) as ListedFact[];
    const pause = () => new Promise((resolve) => setTimeout(resolve, 20));

    await roster('agent', 'add', '--name', 'Scout', '--job', 'finds things');
    await roster('person', 'add', 'Ada');
    const beforeRemember = new Date().toISOString();
    await pause();
    expect(await roster('chat', '--agent', 'Scout', '--as', 'Ada', 'remember that my home town is Rome')).toBe('Noted: your home town is Rome');
    const [remembered] = await list();
    expect(remembered).toMatchObject({ content: 'my home town is Rome', validTo: null, supersededAt: null });
    await pause();
    const beforeUpdate = new Date().toISOString();
    await pause();

    expect(await roster('chat', '--agent', 'Scout', '--as', 'Ada', 'update: my home town is Milan now')).toBe('Updated: your home town is Milan now');
    const [current] = await list();
    expect(current).toMatchObject({ content: 'my home town is Milan now', validTo: null });
    await pause();
    const afterUpdate = new Date().toISOString();

    // What it believed before the update: Rome, as it was stored then, valid for good.
    const believedThen = await list('--recorded-at', beforeUpdate);
    expect(believedThen).toEqual([expect.objectContaining({ id: remembered!.id, content: 'my home town is Rome', validTo: null, supersededAt: current!.recordedAt })]);
    // Then it believed Rome would hold after the update too; now it knows Milan does.
    expect((await list('--recorded-at', beforeUpdate, '--valid-at', afterUpdate)).map((fact) => fact.content)).toEqual(['my home town is Rome']);
    expect((await list('--valid-at', afterUpdate)).map((fact) => fact.content)).toEqual(['my home town is Milan now']);
    // As recorded now, Rome held until the update: a restatement, valid until the change.
    const restated = await list('--valid-at', beforeUpdate);
    expect(restated).toEqual([expect.objectContaining({ content: 'my home town is Rome', validTo: current!.validFrom, supersededAt: null })]);
    expect(restated[0]!.id).not.toBe(remembered!.id);
    // After the update it believes Milan; before anything was said, nothing.
    expect((await list('--recorded-at', afterUpdate)).map((fact) => fact.content)).toEqual(['my home town is Milan now']);
    expect(await list('--recorded-at', beforeRemember)).toEqual([]);

    // The text form, for everyone, reads the same moments.
    const everyone = await roster('memory', 'list', '--agent', 'Scout', '--recorded-at', beforeUpdate);
    expect(everyone.split('\n')).toEqual([
      'Agent-wide (everyone Scout talks to):',
      '  Nothing remembered here yet.',
      'Ada (member):',
      `  ${remembered!.id}  active     my home town is Rome`,
    ]);

    // A time that is not one: a usage error in one line, exit 2.
    const bad = await runRoster(['memory', 'list', '--agent', 'Scout', '--recorded-at', 'yesterday'], { ROSTER_DATA_DIR: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('{'))).toEqual([
      'roster memory list: --recorded-at takes a time like 2026-11-30T08:00:00Z, got "yesterday". `roster memory list --help` shows the usage.',
    ]);
  }, processes);
});
