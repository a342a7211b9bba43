import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanEnv, rosterBin, runRoster, tempDataDir } from './support/roster-process.js';

const folders: string[] = [];
afterEach(() => {
  while (folders.length > 0) fs.rmSync(folders.pop()!, { recursive: true, force: true });
});

describe('roster chat with the offline engine', () => {
  it('remembers, recalls, updates (keeping the old value in time), and forgets', async () => {
    const dir = tempDataDir();
    folders.push(dir);
    const env = { ROSTER_DATA_DIR: dir };
    const roster = async (...args: string[]) => {
      const result = await runRoster(args, env);
      expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(0);
      return result.stdout.trim();
    };
    await roster('agent', 'add', '--name', 'Scout', '--job', 'finds things');
    await roster('person', 'add', 'Ada');
    expect(JSON.parse(await roster('agent', 'list', '--json'))).toEqual([expect.objectContaining({ name: 'Scout', engine: 'offline', status: 'active' })]);

    const said = JSON.parse(await roster('chat', '--agent', 'Scout', '--as', 'Ada', '--json', 'remember that my bike is blue'));
    expect(said).toEqual({
      replies: [
        {
          agent: 'Scout',
          text: 'Noted: your bike is blue',
          toolCalls: [{ toolName: 'remember', input: { content: 'my bike is blue' }, output: expect.objectContaining({ content: 'my bike is blue', created: true }) }],
        },
      ],
    });
    expect(await roster('chat', '--agent', 'Scout', '--as', 'Ada', 'what do you know about my bike?')).toBe('- your bike is blue');
    const beforeUpdate = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await roster('chat', '--agent', 'Scout', '--as', 'Ada', 'update: my bike is green')).toBe('Updated: your bike is green');
    expect(await roster('chat', '--agent', 'Scout', '--as', 'Ada', 'what do you remember about bike')).toBe('- your bike is green');
    // What was true before the update, as recorded now.
    const then = JSON.parse(await roster('memory', 'list', '--agent', 'Scout', '--person', 'Ada', '--valid-at', beforeUpdate, '--json')) as Array<{ content: string }>;
    expect(then.map((fact) => fact.content)).toEqual(['my bike is blue']);
    const now = JSON.parse(await roster('memory', 'list', '--agent', 'Scout', '--person', 'Ada', '--json')) as Array<{ id: string; content: string }>;
    expect(now.map((fact) => fact.content)).toEqual(['my bike is green']);
    const history = await roster('memory', 'history', '--agent', 'Scout', '--fact', now[0]!.id);
    expect(history.split('\n')).toEqual([expect.stringMatching(/^earlier active .* my bike is blue$/), expect.stringMatching(/^this +active .* my bike is green$/)]);

    expect(await roster('chat', '--agent', 'Scout', '--as', 'Ada', 'forget that my bike is green')).toBe('Forgotten.');
    expect(await roster('chat', '--agent', 'Scout', '--as', 'Ada', 'what do you know about bike')).toBe("I don't know anything about bike yet.");
  });

  it('says plainly that it is not a language model', async () => {
    const dir = tempDataDir();
    folders.push(dir);
    await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds things'], { ROSTER_DATA_DIR: dir });
    const result = await runRoster(['chat', '--agent', 'Scout', 'how are you?'], { ROSTER_DATA_DIR: dir });
    expect(result.stdout).toMatch(/^I'm Scout\. I run without a language model/);
  });

  it('exits 1 with a clear line for an unknown agent or person, and 2 without an agent', async () => {
    const dir = tempDataDir();
    folders.push(dir);
    await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds things'], { ROSTER_DATA_DIR: dir });
    const agent = await runRoster(['chat', '--agent', 'Nobody', 'hi'], { ROSTER_DATA_DIR: dir });
    expect(agent.code).toBe(1);
    expect(agent.stderr.trim().split('\n').at(-1)).toBe('roster chat: No agent named "Nobody". roster agent list shows them.');
    const person = await runRoster(['chat', '--agent', 'Scout', '--as', 'Zed', 'hi'], { ROSTER_DATA_DIR: dir });
    expect(person.code).toBe(1);
    expect(person.stderr).toMatch(/No person named "Zed"/);
    const usage = await runRoster(['chat', 'hi'], { ROSTER_DATA_DIR: dir });
    expect(usage.code).toBe(2);
    // A name taken whatever its case: the refusal names the agent that holds it, as it is spelt.
    expect((await runRoster(['agent', 'add', '--name', 'Zoë', '--job', 'keeps the diary'], { ROSTER_DATA_DIR: dir })).code).toBe(0);
    const taken = await runRoster(['agent', 'add', '--name', 'ZOË', '--job', 'keeps another diary'], { ROSTER_DATA_DIR: dir });
    expect(taken.code).toBe(1);
    expect(taken.stderr.trim().split('\n').at(-1)).toBe('roster agent add: An agent named Zoë already exists, and names are the same whatever their case: choose another name.');
    const engine = await runRoster(['agent', 'add', '--name', 'Gpt', '--job', 'talks', '--engine', 'openai:gpt-4o-mini'], { ROSTER_DATA_DIR: dir });
    expect(engine.code).toBe(1);
    expect(engine.stderr).toMatch(/OPENAI_API_KEY/);
  });
});

/** A process's output so far, and a wait until it matches (on each chunk, not on a clock). */
function watchOutput(child: ChildProcess): { text(): string; until(pattern: RegExp): Promise<void>; exited: Promise<number | null> } {
  let text = '';
  const waiters: Array<{ pattern: RegExp; resolve: () => void }> = [];
  const take = (chunk: Buffer) => {
    text += chunk.toString();
    for (const waiter of [...waiters]) if (waiter.pattern.test(text)) waiters.splice(waiters.indexOf(waiter), 1) && waiter.resolve();
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    text: () => text,
    until: (pattern) =>
      pattern.test(text)
        ? Promise.resolve()
        : Promise.race([
            new Promise<void>((resolve) => waiters.push({ pattern, resolve })),
            exited.then((code) => {
              throw new Error(`the process ended (${code}) before printing ${pattern}:\n${text}`);
            }),
          ]),
    exited,
  };
}

describe('interactive roster chat', () => {
  it('shows a prompt on a terminal, and Ctrl-C ends it with 130 at once, mid-turn too, with the turn answered whole or reported lost', async () => {
    const dir = tempDataDir();
    folders.push(dir);
    const env = { ROSTER_DATA_DIR: dir };
    const added = await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds things'], env);
    expect(added.code, added.stderr).toBe(0);
    // A terminal (a pseudo-terminal made by script), as a person types into it.
    const session = () => {
      const child = spawn('script', ['-qfec', `${process.execPath} ${rosterBin} chat --agent Scout`, '/dev/null'], { env: cleanEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
      return { child, output: watchOutput(child) };
    };

    // The positive control: a turn answered after the prompt, and an empty line ends with 0.
    const calm = session();
    await calm.output.until(/you> /);
    calm.child.stdin!.write('remember that my locker is 12\r');
    await calm.output.until(/Noted: your locker is 12[\s\S]*you> /);
    calm.child.stdin!.write('\r');
    expect(await calm.output.exited).toBe(0);

    // Ctrl-C at the prompt.
    const idle = session();
    await idle.output.until(/you> /);
    idle.child.stdin!.write('\x03');
    expect(await idle.output.exited).toBe(130);
    expect(idle.output.text()).not.toMatch(/did not stop within/);

    // Ctrl-C while a turn is under way: it is answered whole, or reported lost; never the stop deadline's message.
    const busy = session();
    await busy.output.until(/you> /);
    busy.child.stdin!.write('remember that my bike is blue\r');
    await busy.output.until(/remember that my bike is blue\r*\n/);
    busy.child.stdin!.write('\x03');
    expect(await busy.output.exited).toBe(130);
    const said = busy.output.text();
    expect(said).not.toMatch(/did not stop within/);
    expect(said).toMatch(/Noted: your bike is blue|Stopped mid-turn: your last message may be kept without its answer\. Ask it again to have it answered\./);
  }, 300_000);

  it('ends with 130 on SIGINT when reading from a pipe, mid-turn too', async () => {
    const dir = tempDataDir();
    folders.push(dir);
    const env = { ROSTER_DATA_DIR: dir };
    const added = await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds things'], env);
    expect(added.code, added.stderr).toBe(0);
    for (const line of [null, 'remember that my scarf is red']) {
      const child = spawn(process.execPath, [rosterBin, 'chat', '--agent', 'Scout'], { env: cleanEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
      const output = watchOutput(child);
      await output.until(/Talking as/);
      // No prompt without a terminal: stdout holds only replies.
      if (line !== null) {
        child.stdin!.write('remember that my hat is green\n');
        await output.until(/Noted: your hat is green/);
        child.stdin!.write(`${line}\n`);
      }
      child.kill('SIGINT');
      expect(await output.exited).toBe(130);
      expect(output.text()).not.toMatch(/did not stop within|you> /);
    }
  }, 300_000);
});
