import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from './support/fake-openai.js';
import { freePort, runRoster, startRoster, tempDataDir } from './support/roster-process.js';

/** A person's own data, taken out through `roster person export` and GET /api/me/export: the built CLI, a running roster start, real HTTP. */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

interface ExportedVersion {
  id: string;
  content: string | null;
  trust: string;
  supersededAt: string | null;
  supersededBy: string | null;
  provenance: { actorKind: string };
}
interface PersonExport {
  format: string;
  formatVersion: number;
  exportedAt: string;
  person: { id: string; name: string };
  facts: Array<{ agent: string; versions: ExportedVersion[] }>;
  messages: Array<{ agent: string | null; role: string; content: string | null }>;
  identities: unknown[];
  learningEvents: Array<{ agent: string; kind: string; text: string }>;
  lessons: Array<{ agent: string; text: string; evidence: Array<Record<string, unknown>> }>;
  sessions: Array<{ id: string }>;
  apiTokens: Array<{ id: string; name: string }>;
}
interface ListedFact {
  id: string;
  content: string;
}

const adaSays = {
  Scout: ['remember that my bike is teal', 'remember that my flat is on Elm street'],
  Coder: ['remember that my violin is from Cremona'],
};
const bobSays = {
  Scout: ['remember that my cat is called Marmalade'],
  Coder: ['remember that my boat is called Petrel'],
};
/** Words only bob ever said: none may be in ada's export. */
const bobWords = ['marmalade', 'petrel', 'lighthouse', 'nemo', 'bob'];

/** About thirty CLI runs and a start, each booting Node and the embedded database. */
const processes = 300_000;

describe('a person exports their own data', () => {
  it('holds all of ada’s facts with every version, her words and the lesson citing her, none of bob’s; mode 600; an unknown person writes nothing; the API gives ada hers, bob’s only to the owner', async () => {
    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    const env = { ROSTER_DATA_DIR: dir, PORT: String(port) };
    const roster = async (...args: string[]) => {
      const result = await runRoster(args, env);
      expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(0);
      return result.stdout.trim();
    };
    await roster('agent', 'add', '--name', 'Scout', '--job', 'finds things');
    await roster('agent', 'add', '--name', 'Coder', '--job', 'writes code');
    await roster('person', 'add', 'ada');
    await roster('person', 'add', 'bob');
    for (const [agent, lines] of Object.entries(adaSays)) for (const line of lines) await roster('chat', '--agent', agent, '--as', 'ada', line);
    for (const [agent, lines] of Object.entries(bobSays)) for (const line of lines) await roster('chat', '--agent', agent, '--as', 'bob', line);
    // Said to every agent at once (team mode): the lines are read through the conversation, each person's alone.
    await roster('chat', '--team', '--as', 'ada', 'remember that my kite is red');
    await roster('chat', '--team', '--as', 'bob', 'remember that my lighthouse is white');

    const listed = async (agent: string, person: string) => JSON.parse(await roster('memory', 'list', '--agent', agent, '--person', person, '--json')) as ListedFact[];
    const bike = (await listed('Scout', 'ada')).find((fact) => fact.content === 'my bike is teal')!;
    expect(bike).toBeDefined();
    await roster('memory', 'correct', '--agent', 'Scout', '--fact', bike.id, '--content', 'my bike is navy');

    const file = path.join(dir, 'exports', 'ada.json');
    fs.mkdirSync(path.dirname(file));
    const written = await runRoster(['person', 'export', 'ada', '--out', file], env);
    expect(written.code, written.stderr).toBe(0);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const text = fs.readFileSync(file, 'utf8');
    const exported = JSON.parse(text) as PersonExport;
    expect(exported).toMatchObject({ format: 'roster-person-export', formatVersion: 1, person: { name: 'ada' } });
    expect(Date.parse(exported.exportedAt)).not.toBeNaN();

    // The positive control: every fact the owner lists for ada, with each agent, is in her file as a current version, and nothing more is current.
    for (const agent of ['Scout', 'Coder']) {
      const owners = await listed(agent, 'ada');
      expect(owners.length).toBeGreaterThan(0);
      const current = exported.facts.filter((fact) => fact.agent === agent).flatMap((fact) => fact.versions.filter((version) => version.supersededAt === null && ['active', 'verified', 'candidate'].includes(version.trust)));
      expect(current.map(({ id, content }) => ({ id, content })).sort((a, b) => a.id.localeCompare(b.id))).toEqual(owners.map(({ id, content }) => ({ id, content })).sort((a, b) => a.id.localeCompare(b.id)));
    }
    expect(exported.facts.filter((fact) => fact.agent === 'Coder').flatMap((fact) => fact.versions.map((version) => version.content)).sort()).toEqual(['my kite is red', 'my violin is from Cremona']);
    // The corrected fact, with both of its versions and who made each.
    const corrected = exported.facts.find((fact) => fact.versions.some((version) => version.id === bike.id))!;
    expect(corrected.versions.map(({ content, trust }) => ({ content, trust }))).toEqual([
      { content: 'my bike is teal', trust: 'retracted' },
      { content: 'my bike is navy', trust: 'active' },
    ]);
    expect(corrected.versions[0]!.supersededBy).toBe(corrected.versions[1]!.id);
    expect(corrected.versions.map((version) => version.provenance.actorKind)).toEqual(['person', 'owner']);
    // Her words and the agents' replies to her, one-to-one and in team mode.
    const said = exported.messages.filter((message) => message.role === 'person').map((message) => message.content);
    expect(said.sort()).toEqual([...adaSays.Scout, ...adaSays.Coder, 'remember that my kite is red'].sort());
    expect(exported.messages).toContainEqual(expect.objectContaining({ role: 'agent', agent: 'Coder', content: 'Noted: your violin is from Cremona' }));
    expect(exported.messages).toContainEqual(expect.objectContaining({ role: 'agent', agent: 'Scout', content: 'Noted: your kite is red' }));
    expect(exported.learningEvents).toContainEqual(expect.objectContaining({ agent: 'Scout', kind: 'correction' }));

    // The negative control: bob's facts exist (the owner lists them), and not one of his words, ids or his name is in ada's file.
    const bobsFacts = [...(await listed('Scout', 'bob')), ...(await listed('Coder', 'bob'))];
    expect(bobsFacts.map((fact) => fact.content).sort()).toEqual(['my boat is called Petrel', 'my cat is called Marmalade', 'my lighthouse is white', 'my lighthouse is white']);
    for (const word of bobWords) expect(text.toLowerCase()).not.toContain(word);
    for (const fact of bobsFacts) expect(text).not.toContain(fact.id);

    // An unknown person: one clear line, exit 1, no file.
    const nobodyFile = path.join(dir, 'exports', 'nobody.json');
    const nobody = await runRoster(['person', 'export', 'nobody', '--out', nobodyFile], env);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr.trim().split('\n').filter((line) => !line.startsWith('{'))).toEqual(['roster person export: No person named "nobody". roster person add nobody adds one.']);
    // A folder that does not exist: one line, exit 1, nothing made.
    const lost = await runRoster(['person', 'export', 'ada', '--out', path.join(dir, 'missing', 'ada.json')], env);
    expect(lost.code).toBe(1);
    expect(lost.stderr.trim().split('\n').filter((line) => !line.startsWith('{'))).toEqual([`roster person export: The folder ${path.join(dir, 'missing')} does not exist: create it, or give --out a file in another folder.`]);
    expect(fs.existsSync(path.join(dir, 'missing'))).toBe(false);
    // No name: a usage error (exit 2), no file.
    expect((await runRoster(['person', 'export', '--out', nobodyFile], env)).code).toBe(2);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['ada.json']);

    // Through the API of a running Roster, whose judge paraphrases lessons drawn from several people.
    const paraphrase = 'Quote every price in euros before any other currency.';
    const judge = await startFakeOpenAi(() => ({ text: JSON.stringify({ lesson: paraphrase }) }));
    cleanups.push(() => judge.close());
    const started = startRoster(['start'], { ...env, ROSTER_JUDGE_ENGINE: judge.engine, ROSTER_QUEUE_PREFIX: `test-${path.basename(dir)}` });
    cleanups.push(async () => void (await started.stop()));
    await started.waitForOutput(/running at/);
    const address = `http://127.0.0.1:${port}`;
    const signIn = async (...as: string[]) => {
      const link = await roster('login-link', ...as);
      const response = await fetch(`${address}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: new URL(link).hash.slice(1) }) });
      expect(response.status).toBe(200);
      const body = (await response.json()) as { csrfToken: string };
      return { cookie: response.headers.getSetCookie()[0]!.split(';')[0]!, csrfToken: body.csrfToken };
    };
    // Lessons: one drawn from ada's and bob's words (agent-wide), one from bob's alone; the owner approves both.
    const queue = { ...env, ROSTER_QUEUE_PREFIX: `test-${path.basename(dir)}` };
    const say = async (agent: string, person: string, line: string) => expect((await runRoster(['chat', '--agent', agent, '--as', person, line], queue)).code).toBe(0);
    await say('Scout', 'ada', 'from now on, give me prices in euros first');
    await say('Scout', 'bob', 'from now on, give me the prices in euros first');
    await say('Coder', 'bob', 'from now on, call me captain Nemo always');
    await say('Coder', 'bob', 'from now on, call me captain Nemo always');
    for (const agent of ['Scout', 'Coder']) {
      const review = await runRoster(['jobs', 'run', 'review', '--agent', agent, '--wait'], queue);
      expect(review.code, review.stderr).toBe(0);
    }
    const pending = JSON.parse((await runRoster(['approvals', 'list', '--json'], queue)).stdout) as Array<{ id: string; agent: string; text: string }>;
    expect(pending.map(({ agent, text }) => ({ agent, text })).sort((a, b) => a.agent.localeCompare(b.agent))).toEqual([
      { agent: 'Coder', text: 'Call me captain Nemo always.' },
      { agent: 'Scout', text: paraphrase },
    ]);
    for (const approval of pending) expect((await runRoster(['approvals', 'approve', approval.id, '--as', 'owner'], queue)).code).toBe(0);

    const ada = await signIn('--as', 'ada');
    const owner = await signIn();
    const made = await fetch(`${address}/api/tokens`, {
      method: 'POST',
      headers: { cookie: ada.cookie, 'x-csrf-token': ada.csrfToken, origin: address, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'laptop' }),
    });
    expect(made.status).toBe(201);
    const token = (await made.json()) as { id: string; token: string };
    const get = async (who: { cookie: string }, query = '') => {
      const response = await fetch(`${address}/api/me/export${query}`, { headers: { cookie: who.cookie } });
      return { status: response.status, text: await response.text() };
    };

    const own = await get(ada);
    expect(own.status).toBe(200);
    const hers = JSON.parse(own.text) as PersonExport;
    expect(hers.person.name).toBe('ada');
    expect(hers.facts.flatMap((fact) => fact.versions.map((version) => version.id)).sort()).toEqual(exported.facts.flatMap((fact) => fact.versions.map((version) => version.id)).sort());
    expect(hers.apiTokens).toEqual([expect.objectContaining({ id: token.id, name: 'laptop' })]);
    expect(hers.sessions.length).toBe(1);
    // Ids and dates only: neither the token, nor its hash, nor the session cookie's.
    const sessionToken = decodeURIComponent(ada.cookie.split('=')[1]!);
    for (const secret of [token.token, token.token.replace(/^rst_/, ''), sessionToken]) {
      expect(own.text).not.toContain(secret);
      expect(own.text).not.toContain(createHash('sha256').update(secret).digest('hex'));
    }
    for (const word of bobWords) expect(own.text.toLowerCase()).not.toContain(word);
    // The shared lesson, with her evidence marked hers and bob's only counted; bob's own lesson is not hers.
    expect(hers.lessons).toEqual([
      expect.objectContaining({ agent: 'Scout', text: paraphrase, evidence: [expect.objectContaining({ yours: true, kind: 'preference' }), { yours: false, kind: 'preference' }] }),
    ]);
    expect(hers.messages.map((message) => message.content)).toContain('from now on, give me prices in euros first');
    expect(own.text).not.toContain('the prices in euros');

    const refused = await get(ada, '?person=bob');
    expect(refused.status).toBe(403);
    // Whether the named person exists or not: a member cannot probe names.
    expect((await get(ada, '?person=nobody')).status).toBe(403);
    expect(JSON.parse((await get(ada, '?person=ADA')).text)).toMatchObject({ person: { name: 'ada' } });
    expect(refused.text.toLowerCase()).not.toContain('marmalade');

    const bobs = await get(owner, '?person=bob');
    expect(bobs.status).toBe(200);
    const his = JSON.parse(bobs.text) as PersonExport;
    expect(his.person.name).toBe('bob');
    expect(his.facts.flatMap((fact) => fact.versions.map((version) => version.content)).sort()).toEqual(bobsFacts.map((fact) => fact.content).sort());
    expect(bobs.text).not.toContain('my bike is');
    expect(his.lessons.map((lesson) => lesson.text).sort()).toEqual(['Call me captain Nemo always.', paraphrase]);
    expect((await get(owner, '?person=nobody')).status).toBe(404);
  }, processes);
});
