import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { connectionFromUrl, createQueues } from '@roster/jobs';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, runRoster, startRoster, tempDataDir, type RunResult, type RunningRoster } from './support/roster-process.js';

const cliManifest = JSON.parse(fs.readFileSync(new URL('../apps/cli/package.json', import.meta.url), 'utf8')) as { version: string };
const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function dataDir(): string {
  const dir = tempDataDir();
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** What a person reads on stderr: the log lines (JSON) left out. */
function stderrLines(result: RunResult): string[] {
  return result.stderr
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('{'));
}

/** A roster bound to one data folder; `ok` insists on exit 0 and returns stdout. */
function rosterIn(dir: string, extra: Record<string, string> = {}) {
  const run = (...args: string[]) => runRoster(args, { ROSTER_DATA_DIR: dir, ...extra });
  const ok = async (...args: string[]) => {
    const result = await run(...args);
    expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(0);
    return result.stdout.trim();
  };
  return { run, ok };
}

/** The job queues under a prefix of their own on the machine's Redis, emptied and closed after the test. */
function queuesOfTheirOwn(): { prefix: string; queues: ReturnType<typeof createQueues> } {
  const prefix = `test-${randomUUID()}`;
  const queues = createQueues(connectionFromUrl(redisUrl), prefix);
  cleanups.push(async () => {
    await Promise.all(Object.values(queues.queues).map((queue) => queue.obliterate({ force: true })));
    await queues.close();
  });
  return { prefix, queues };
}

const characters = (line: string): number => [...line].length;

/** Tests that run the real process many times: each start boots Node and, for most commands, the embedded database. */
const manyProcesses = 300_000;

describe('version and help', () => {
  it('prints the version of the CLI package with --version and -v', async () => {
    for (const flag of ['--version', '-v']) {
      const result = await runRoster([flag], {});
      expect(result).toMatchObject({ code: 0, stdout: `${cliManifest.version}\n` });
    }
    const misspelt = await runRoster(['--verison'], {});
    expect(misspelt.code).toBe(2);
  });

  it('answers --help and -h at every level with exit 0, in lines of at most 100 characters', async () => {
    const overview = await runRoster(['--help'], {});
    expect(overview.code).toBe(0);
    const lines = overview.stdout.trimEnd().split('\n');
    // The overview names every command, wrapped or not: the width check below reads real help.
    const commands = [
      'start', 'server', 'worker', 'gateway', 'migrate', 'db serve', 'agent add', 'agent list', 'agent archive', 'agent restore',
      'agent rename', 'agent purge', 'person add', 'person list', 'person link-code', 'person export', 'person forget', 'chat', 'memory list', 'memory forget',
      'memory history', 'jobs run', 'mirror report', 'approvals', 'lessons', 'audit head', 'audit verify', 'login-link', 'doctor', 'backup', 'restore',
    ];
    for (const command of commands) expect(overview.stdout).toContain(`roster ${command}`);
    expect(overview.stdout).toContain('<fade|harvest|mirror|review|extract|embed|episodes|erase|vacuum|backup>');
    expect(Math.max(...lines.map(characters))).toBeLessThanOrEqual(100);

    const groups = ['db', 'agent', 'person', 'memory', 'jobs', 'mirror', 'audit'];
    for (const level of [...groups.map((group) => [group]), ...commands.map((command) => command.split(' '))]) {
      for (const flag of groups.includes(level.join(' ')) || level.length === 1 ? ['--help', '-h'] : ['--help']) {
        const result = await runRoster([...level, flag], {});
        expect(result.code, `${level.join(' ')} ${flag}\n${result.stderr}`).toBe(0);
        expect(result.stdout).toMatch(new RegExp(`^Usage: roster ${level.join(' ')}`));
        for (const line of result.stdout.split('\n')) expect(characters(line), line).toBeLessThanOrEqual(100);
      }
    }
    const agentHelp = await runRoster(['agent', '--help'], {});
    expect(agentHelp.stdout).toContain('roster agent restore NAME');
    expect(agentHelp.stdout).not.toContain('roster memory');

    // A group without a command is a usage error, in one line.
    const bare = await runRoster(['agent'], {});
    expect(bare.code).toBe(2);
    expect(stderrLines(bare)).toEqual([expect.stringMatching(/^roster agent: choose one of: agent add, .*agent restore, agent rename/)]);
  }, manyProcesses);

  it('says in chat --help whom chat speaks as without --as', async () => {
    const result = await runRoster(['chat', '--help'], {});
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/--as PERSON .*Without it: the first owner created/);
  });
});

describe('agents and people', () => {
  it('takes names in any script, renames with a clear refusal when a name is taken, and restores an archived agent', async () => {
    const { run, ok } = rosterIn(dataDir());
    // Latin with a diaeresis, Greek, Han and Devanagari (a virama, a combining mark) pass the database's check too.
    for (const name of ['Zoë', 'Ζωή', '李', 'नमस्ते', 'Scout']) expect(await ok('agent', 'add', '--name', name, '--job', 'finds things')).toMatch(new RegExp(`^Added ${name} `));
    const refused = await run('agent', 'add', '--name', 'Zo!', '--job', 'finds things');
    expect(refused.code).toBe(1);
    expect(stderrLines(refused)).toEqual([expect.stringMatching(/^roster agent add: An agent's name is a letter \(of any script\)/)]);
    const digit = await run('agent', 'add', '--name', '9lives', '--job', 'finds things');
    expect(digit.code).toBe(1);
    const names = (JSON.parse(await ok('agent', 'list', '--json')) as Array<{ name: string }>).map((agent) => agent.name);
    expect(names.sort()).toEqual(['Scout', 'Zoë', 'Ζωή', 'नमस्ते', '李'].sort());

    // Names are unique whatever their case, in any script.
    const taken = await run('agent', 'rename', 'Scout', 'ZOË');
    expect(taken.code).toBe(1);
    expect(stderrLines(taken)).toEqual(['roster agent rename: The name ZOË is taken by the agent Zoë (names are unique whatever their case); choose another.']);
    const takenGreek = await run('agent', 'rename', 'Scout', 'ΖΩΉ');
    expect(takenGreek.code).toBe(1);
    expect(await ok('agent', 'rename', 'Scout', 'Finder')).toBe('Renamed Scout to Finder; its memory, lessons and conversations stay with it.');
    expect(await ok('chat', '--agent', 'finder', 'remember that my bike is red')).toBe('Noted: your bike is red');
    const old = await run('chat', '--agent', 'Scout', 'hi');
    expect(old.code).toBe(1);
    expect(stderrLines(old)).toEqual(['roster chat: No agent named "Scout". roster agent list shows them.']);
    // A /agent switch takes a name in any script.
    expect(await ok('chat', '--agent', 'Finder', '/agent Zoë')).toBe('Now talking to Zoë.');

    expect(await ok('agent', 'archive', 'Finder')).toMatch(/roster agent restore Finder/);
    const archived = await run('chat', '--agent', 'Finder', 'what do you know about my bike');
    expect(archived.code).toBe(1);
    expect(stderrLines(archived)).toEqual(['roster chat: Finder is archived; the owner can restore it: roster agent restore Finder.']);
    expect(await ok('agent', 'restore', 'finder')).toBe('Restored Finder: it is active again, with the memory it kept.');
    expect(await ok('chat', '--agent', 'Finder', 'what do you know about my bike')).toBe('- your bike is red');
    const again = await run('agent', 'restore', 'Finder');
    expect(again.code).toBe(1);
    expect(stderrLines(again)).toEqual(['roster agent restore: Finder is not archived; there is nothing to restore.']);
  }, manyProcesses);

  it('speaks as the first owner without --as, even once a second owner exists, and lists every person’s facts by person', async () => {
    const { run, ok } = rosterIn(dataDir());
    await ok('agent', 'add', '--name', 'Scout', '--job', 'finds things');
    expect(await ok('person', 'list')).toMatch(/^No people yet/);
    expect(await ok('chat', '--agent', 'Scout', 'remember that my bike is red')).toBe('Noted: your bike is red');
    await ok('person', 'add', 'Ada', '--role', 'owner');
    // The owner made on first use is still the default speaker: what was told a moment ago is known.
    expect(await ok('chat', '--agent', 'Scout', 'what do you know about my bike')).toBe('- your bike is red');
    // --as overrides, and Ada's scope does not read the first owner's facts.
    expect(await ok('chat', '--agent', 'Scout', '--as', 'Ada', 'what do you know about my bike')).toBe("I don't know anything about your bike yet.");
    expect(await ok('chat', '--agent', 'Scout', '--as', 'Ada', 'remember that my cat is called Tom')).toBe('Noted: your cat is called Tom');

    const people = JSON.parse(await ok('person', 'list', '--json')) as Array<{ name: string; role: string; defaultSpeaker: boolean }>;
    expect(people.map(({ name, role, defaultSpeaker }) => ({ name, role, defaultSpeaker }))).toEqual([
      { name: 'Ada', role: 'owner', defaultSpeaker: false },
      { name: 'owner', role: 'owner', defaultSpeaker: true },
    ]);

    const everyone = JSON.parse(await ok('memory', 'list', '--agent', 'Scout', '--json')) as {
      agent: string;
      agentWide: unknown[];
      people: Array<{ person: string; facts: Array<{ content: string; audience: string }> }>;
    };
    expect(everyone.agent).toBe('Scout');
    expect(everyone.agentWide).toEqual([]);
    expect(everyone.people.map(({ person, facts }) => [person, facts.map((fact) => fact.content)])).toEqual([
      ['Ada', ['my cat is called Tom']],
      ['owner', ['my bike is red']],
    ]);
    const text = await ok('memory', 'list', '--agent', 'Scout');
    expect(text.split('\n')).toEqual([
      'Agent-wide (everyone Scout talks to):',
      '  Nothing remembered here yet.',
      'Ada (owner):',
      expect.stringMatching(/^ {2}\S+ {2}active {5}my cat is called Tom$/),
      'owner (owner):',
      expect.stringMatching(/^ {2}\S+ {2}active {5}my bike is red$/),
    ]);
    // --person keeps to one person's scope.
    const ada = JSON.parse(await ok('memory', 'list', '--agent', 'Scout', '--person', 'Ada', '--json')) as Array<{ content: string }>;
    expect(ada.map((fact) => fact.content)).toEqual(['my cat is called Tom']);
    const nobody = await run('memory', 'list', '--agent', 'Scout', '--person', 'Zed');
    expect(nobody.code).toBe(1);
  }, manyProcesses);
});

describe('usage errors and limits', () => {
  it('refuses --agent with --team in one line, exit 2, and runs each alone', async () => {
    const { run, ok } = rosterIn(dataDir());
    await ok('agent', 'add', '--name', 'Scout', '--job', 'finds things');
    const both = await run('chat', '--agent', 'Scout', '--team', 'hi');
    expect(both.code).toBe(2);
    expect(stderrLines(both)).toEqual(['roster chat: --agent and --team exclude each other: --team talks to every active agent. `roster chat --help` shows the usage.']);
    expect(await ok('chat', '--team', 'how are you?')).toMatch(/^I'm Scout\./);
    expect(await ok('chat', '--agent', 'Scout', 'how are you?')).toMatch(/^I'm Scout\./);
    const unknown = await run('chat', '--agent', 'Scout', '--loud', 'hi');
    expect(unknown.code).toBe(2);
    expect(stderrLines(unknown)).toHaveLength(1);
  });

  it('takes a message of 4,000 characters and refuses 4,001 saying the limit is 4,000', async () => {
    const { run, ok } = rosterIn(dataDir());
    await ok('agent', 'add', '--name', 'Scout', '--job', 'finds things');
    const longest = await run('chat', '--agent', 'Scout', 'a'.repeat(4000));
    expect(longest.code, longest.stderr).toBe(0);
    const tooLong = await run('chat', '--agent', 'Scout', 'a'.repeat(4001));
    expect(tooLong.code).toBe(1);
    expect(stderrLines(tooLong)).toEqual(['roster chat: The message is too long; the most is 4,000 characters.']);
  });
});

describe('failures are one line', () => {
  it('a data folder that cannot be written: one line, the stack only with LOG_LEVEL=debug', async () => {
    const dir = dataDir();
    const file = path.join(dir, 'a-file');
    fs.writeFileSync(file, '');
    const plain = await runRoster(['agent', 'list'], { ROSTER_DATA_DIR: path.join(file, 'data') });
    expect(plain.code).toBe(1);
    expect(stderrLines(plain)).toEqual([expect.stringMatching(/^roster agent list: ENOTDIR: .*Check that ROSTER_DATA_DIR names a folder Roster can write to/)]);
    const debug = await runRoster(['agent', 'list'], { ROSTER_DATA_DIR: path.join(file, 'data'), LOG_LEVEL: 'debug' });
    expect(debug.code).toBe(1);
    expect(stderrLines(debug)[0]).toBe(stderrLines(plain)[0]);
    expect(debug.stderr).toMatch(/^ {4}at /m);
    expect(plain.stderr).not.toMatch(/^ {4}at /m);
  });

  it('an unreachable DATABASE_URL or REDIS_URL: one line each, exit 1', async () => {
    const database = await runRoster(['agent', 'list'], { DATABASE_URL: `postgres://roster@127.0.0.1:${await freePort()}/roster` });
    expect(database.code).toBe(1);
    expect(stderrLines(database)).toEqual([expect.stringMatching(/^roster agent list: DATABASE_URL is not reachable/)]);
    const redis = await runRoster(['jobs', 'run', 'fade'], { ROSTER_DATA_DIR: dataDir(), REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    expect(redis.code).toBe(1);
    expect(stderrLines(redis)).toEqual([expect.stringMatching(/^roster jobs run: REDIS_URL is not reachable/)]);
  });

  it('jobs run --wait with no worker: one line that says what to do; without --wait the job is queued', async () => {
    const { prefix } = queuesOfTheirOwn();
    const { run } = rosterIn(dataDir(), { ROSTER_QUEUE_PREFIX: prefix });
    const queued = await run('jobs', 'run', 'fade');
    expect(queued.code, queued.stderr).toBe(0);
    expect(queued.stdout).toMatch(/^fade queued as job \S+\.$/m);
    const waited = await run('jobs', 'run', 'fade', '--wait', '--timeout', '1');
    expect(waited.code).toBe(1);
    expect(stderrLines(waited)).toEqual([
      'Waiting for a worker to run fade (roster start or roster worker must be running)…',
      'roster jobs run: No worker finished fade within 1 s; the job stays queued. Start roster start or roster worker, or wait longer with --timeout.',
    ]);
  });

  it('jobs run without --wait, twenty times: each queues one job and says one line, never a stack', { timeout: manyProcesses }, async () => {
    const { prefix, queues } = queuesOfTheirOwn();
    const { run } = rosterIn(dataDir(), { ROSTER_QUEUE_PREFIX: prefix });
    const runs = [];
    // Four at a time: the connection closing as the command ends is where a stack used to come from.
    for (let batch = 0; batch < 5; batch += 1) runs.push(...(await Promise.all(Array.from({ length: 4 }, () => run('jobs', 'run', 'fade')))));
    for (const result of runs) {
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout.trim().split('\n')).toEqual([expect.stringMatching(/^fade queued as job \S+\.$/)]);
      expect(stderrLines(result)).toEqual([]);
    }
    const ids = runs.map((result) => /job (\S+)\./.exec(result.stdout)![1]);
    expect(new Set(ids).size).toBe(20);
    // One job each, none twice: the queue holds exactly the twenty the commands named.
    const jobs = await queues.queues.fade.getJobs(['waiting', 'delayed', 'prioritized']);
    expect(jobs.map((job) => job.id).sort()).toEqual([...ids].sort());
  });
});

describe('HTTP answers', () => {
  async function serve(env: Record<string, string>): Promise<string> {
    const roster: RunningRoster = startRoster(['start'], { ROSTER_DATA_DIR: dataDir(), PORT: String(await freePort()), ...env });
    cleanups.push(async () => void (await roster.stop()));
    const [, address] = (await roster.waitForOutput(/running at (http:\/\/\S+)/)) as RegExpMatchArray;
    return address!;
  }

  /** A 404, a body that is not JSON, and a malformed URL. */
  async function answers(address: string): Promise<Array<{ status: number; body: { error: { code: string; message: string; stack?: string } } }>> {
    const requests = [
      fetch(`${address}/no-such-page`),
      fetch(`${address}/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{not json' }),
      fetch(`${address}/%zz`),
    ];
    return Promise.all(requests.map(async (request) => {
      const response = await request;
      return { status: response.status, body: (await response.json()) as { error: { code: string; message: string; stack?: string } } };
    }));
  }

  it('carries no stack unless NODE_ENV=development is set, always as { error: { code, message } }', async () => {
    const plain = await answers(await serve({}));
    expect(plain.map((answer) => answer.status)).toEqual([404, 400, 400]);
    for (const answer of plain) {
      expect(Object.keys(answer.body.error).sort()).toEqual(['code', 'message']);
      expect(JSON.stringify(answer.body)).not.toMatch(/node_modules|\/work\/|\bat /);
    }
    expect(plain[1]!.body.error.message).toMatch(/not valid JSON/);

    // Positive control: asked for explicitly, development shows the stack of the same bad request.
    const development = await answers(await serve({ NODE_ENV: 'development' }));
    expect(development[1]!.status).toBe(400);
    expect(development[1]!.body.error.stack).toMatch(/content-type-parser/);
  }, manyProcesses);
});
