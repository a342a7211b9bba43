import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runRoster, tempDataDir } from './support/roster-process.js';

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
    const engine = await runRoster(['agent', 'add', '--name', 'Gpt', '--job', 'talks', '--engine', 'openai:gpt-4o-mini'], { ROSTER_DATA_DIR: dir });
    expect(engine.code).toBe(1);
    expect(engine.stderr).toMatch(/OPENAI_API_KEY/);
  });
});
