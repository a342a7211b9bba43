import fs from 'node:fs';
import path from 'node:path';
import { parseConfig } from '@roster/config';
import { testInstallationKey, testSecretKey } from '@roster/config/testing';
import { migrate, openEmbeddedDatabase, type Database } from '@roster/db';
import { createRuntime, type Runtime } from '@roster/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { agentOf, startFakeOpenAi } from './support/fake-openai.js';
import { runRoster, tempDataDir } from './support/roster-process.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function open(dir: string): Promise<{ database: Database; roster: Runtime }> {
  const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
  await migrate(database);
  const roster = await createRuntime({ config: parseConfig({}), database, key: testInstallationKey });
  return { database, roster };
}

async function learningEvents(database: Database): Promise<string[]> {
  return database.adminScope('test: read learning events', async (tx) => {
    const { rows } = await tx.query<{ agent: string; person: string; kind: string; actor: string }>(
      `select a.name as agent, p.name as person, e.kind, e.actor_kind as actor
       from learning_events e join agents a on a.id = e.agent_id left join people p on p.id = e.person_id`,
    );
    return rows.map((row) => `${row.agent}/${row.person}/${row.kind}`).sort();
  });
}

describe('one road', () => {
  it('records a correction under exactly the agent and person it was said to, on every road', async () => {
    const dir = tempDataDir();
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    // The colleague road needs a model that decides to ask a colleague: a local fake of the OpenAI API.
    const fake = await startFakeOpenAi((request) => {
      const agent = agentOf(request);
      if (agent === 'Helper' && request.toolResults.length === 0) return { tool: 'ask_agent', input: { agent: 'Scout', question: 'Which floor is the desk on?' } };
      if (agent === 'Helper') return { text: 'Scout says it does not know.' };
      return { text: `${agent} has no idea.` };
    });
    cleanups.push(() => fake.close());

    const seeded = await open(dir);
    const directory = seeded.roster.core.directory;
    for (const name of ['Scout', 'Coder']) await directory.addAgent({ name, job: `the ${name} job` });
    await directory.addAgent({ name: 'Helper', job: 'asks colleagues', engine: fake.engine });
    const ada = await directory.addPerson({ name: 'Ada' });
    await directory.addPerson({ name: 'Bob' });
    await directory.linkIdentity(ada.id, 'telegram', 'tg-1001', 'ada');
    await seeded.database.close();

    // Road 1: the CLI.
    const cli = await runRoster(['chat', '--agent', 'Scout', '--as', 'Ada', "that's wrong, my desk is on floor 3"], { ROSTER_DATA_DIR: dir, ROSTER_SECRET_KEY: testSecretKey });
    expect(cli.code, cli.stderr).toBe(0);

    const { database, roster } = await open(dir);
    cleanups.push(() => database.close());
    expect(await learningEvents(database)).toEqual(['Scout/Ada/correction']);

    // Road 2: the core API, as a channel adapter calls it (Ada's Telegram handle, an @mention).
    await roster.core.handle({
      channel: 'telegram',
      conversation: { externalId: 'tg-chat-1001', kind: 'dm' },
      sender: { externalId: 'tg-1001' },
      externalMessageId: '1',
      text: "@Coder you're wrong, I indent with tabs",
    });
    // Road 3: team mode — every agent is addressed, so each records it under Bob.
    await roster.core.handle({ channel: 'web', conversation: { externalId: 'web-bob', kind: 'dm' }, sender: { personId: (await roster.core.directory.personByName('Bob')).id }, text: 'from now on, answer in Italian' }, { team: true });
    // Road 4: a colleague call. Ada corrects Helper, which asks Scout; the question Scout gets is an agent's, not a person's.
    const colleague = await roster.core.handle(
      { channel: 'cli', conversation: { externalId: 'cli-ada-helper', kind: 'dm' }, sender: { personId: ada.id }, text: 'actually, ask Scout which floor my desk is on' },
      { agent: 'Helper' },
    );
    expect(colleague.replies[0]?.toolCalls.map((call) => call.toolName)).toEqual(['ask_agent']);
    expect(colleague.replies[0]?.toolCalls[0]?.output).toMatchObject({ agent: 'Scout' });

    expect(await learningEvents(database)).toEqual([
      'Coder/Ada/correction',
      'Coder/Bob/preference',
      'Helper/Ada/correction',
      'Helper/Bob/preference',
      'Scout/Ada/correction',
      'Scout/Bob/preference',
    ]);
  });

  it('detects signals in whole words, only at the start where it must, in English and Italian', async () => {
    const { detectSignals } = await import('@roster/core');
    const kinds = (text: string) => detectSignals(text).map((signal) => signal.kind);
    expect(kinds("That's wrong, it is Tuesday")).toEqual(['correction']);
    expect(kinds('No, the other one')).toEqual(['correction']);
    expect(kinds('hai sbagliato il nome')).toEqual(['correction']);
    expect(kinds('ricorda che preferisco il tè')).toEqual(['remember']);
    expect(kinds('la prossima volta chiedimi prima')).toEqual(['preference']);
    expect(kinds('next time, ask me first')).toEqual(['preference']);
    expect(kinds('👎')).toEqual(['negative-rating']);
    // Negative controls: no whole-word match.
    expect(kinds('stavo ricordando la gita')).toEqual([]);
    expect(kinds('I have no idea what happened')).toEqual([]);
    expect(kinds('the remembrance day parade')).toEqual([]);
    expect(kinds('sbagliatissimo')).toEqual([]);
  });
});
