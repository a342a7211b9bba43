import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { connectionFromUrl, createQueues, jobNames } from '@roster/jobs';
import { afterEach, describe, expect, it } from 'vitest';
import { endRoster, runRoster, signInThrough, startListening, tempDataDir } from './support/roster-process.js';

/**
 * One road for corrections: “that was wrong” said on the page (the API route
 * its Correct… button calls) or with `roster memory correct` becomes a
 * learning event and, after harvest, a mirror case for that agent and person,
 * as “actually, …” in chat does. Everything goes through the real `roster
 * start` (server and worker), its HTTP API and the `roster` command beside it.
 */

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

interface ListedFact {
  id: string;
  content: string;
}
interface MirrorCaseView {
  personId: string | null;
  text: string;
}

describe('a correction at every door', () => {
  it('becomes a mirror case for the agent and person it was said to, from the page, the CLI and chat alike, and for nobody else', { timeout: 600_000 }, async () => {
    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const prefix = `test-${randomUUID()}`;
    cleanups.push(async () => {
      const queues = createQueues(connectionFromUrl(redisUrl), prefix);
      for (const name of jobNames) await queues.queues[name].obliterate({ force: true });
      await queues.close();
    });
    const env = {
      ROSTER_DATA_DIR: dir,
      REDIS_URL: redisUrl,
      ROSTER_QUEUE_PREFIX: prefix,
      // The nightly jobs at an hour far from now: only the harvests the turns queue and this test asks for run.
      ROSTER_TIMEZONE: 'UTC',
      ROSTER_NIGHTLY_HOUR: String((new Date().getUTCHours() + 12) % 24),
    };
    const roster = async (...args: string[]) => {
      const result = await runRoster(args, env, 120_000);
      expect(result.code, `roster ${args.join(' ')}\n${result.stdout}\n${result.stderr}`).toBe(0);
      return result.stdout.trim();
    };

    // Roster running first: every command after it is a client of the database host it holds.
    const server = await startListening(env);
    cleanups.push(() => endRoster(server.roster));
    const owner = await signInThrough(server.address, env);
    await roster('person', 'add', 'Ada', '--role', 'owner');
    await roster('person', 'add', 'Bob');
    await roster('agent', 'add', '--name', 'Scout', '--job', 'keeps notes');
    await roster('agent', 'add', '--name', 'Coder', '--job', 'writes code');
    // What each pair was told: one fact for each door's correction, one for a chat correction.
    expect(await roster('chat', '--agent', 'Scout', '--as', 'Ada', 'remember that my bike is painted blue')).toBe('Noted: your bike is painted blue');
    expect(await roster('chat', '--agent', 'Scout', '--as', 'Bob', 'remember that my desk is on floor two')).toBe('Noted: your desk is on floor two');
    expect(await roster('chat', '--agent', 'Coder', '--as', 'Ada', 'remember that my teapot sits on the oak shelf by the kiwi window')).toBe('Noted: your teapot sits on the oak shelf by the kiwi window');

    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${server.address}${path}`, {
        method,
        headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(response.status, `${method} ${path}`).toBe(200);
      return response.json() as Promise<any>;
    };
    const memoryOf = async (agent: string, person: string): Promise<{ personId: string; facts: ListedFact[] }> => {
      const { groups } = await api('GET', `/api/agents/${agent}/memory?person=${person}`);
      return { personId: groups[0].person.id, facts: groups[0].facts };
    };
    const ada = await memoryOf('Scout', 'Ada');
    const bob = await memoryOf('Scout', 'Bob');
    const bike = ada.facts.find((fact) => fact.content === 'my bike is painted blue')!;
    const desk = bob.facts.find((fact) => fact.content === 'my desk is on floor two')!;
    expect(bike).toBeDefined();
    expect(desk).toBeDefined();

    // The page's door: the route its Correct… button calls, as the owner, on Ada's fact with Scout.
    const corrected = await api('POST', `/api/agents/Scout/facts/${bike.id}/correct`, { content: 'my bike is painted green' });
    expect(corrected).toMatchObject({ fact: { content: 'my bike is painted green' }, retracted: { id: bike.id, trust: 'retracted' } });
    // The CLI's door, on Bob's fact with Scout.
    const printed = JSON.parse(await roster('memory', 'correct', '--agent', 'Scout', '--fact', desk.id, '--content', 'my desk is on floor three', '--json'));
    expect(printed).toMatchObject({ retracted: { id: desk.id }, fact: { content: 'my desk is on floor three' } });
    // The chat's door (the positive control for the road they now share), Ada with Coder.
    expect(await roster('chat', '--agent', 'Coder', '--as', 'Ada', 'actually, my teapot sits on the oak shelf by the mango window')).toBe('Corrected: your teapot sits on the oak shelf by the mango window');
    // Each correction changed the fact it was aimed at.
    expect((await memoryOf('Scout', 'Ada')).facts.map((fact) => fact.content)).toEqual(['my bike is painted green']);
    expect((await memoryOf('Scout', 'Bob')).facts.map((fact) => fact.content)).toEqual(['my desk is on floor three']);

    const harvested = JSON.parse(await roster('jobs', 'run', 'harvest', '--wait', '--json')) as { result: Record<string, unknown> };
    expect(harvested.result).toMatchObject({ events: expect.any(Number) });

    const scout = (await api('GET', '/api/agents/Scout/mirror')) as { cases: MirrorCaseView[]; total: number };
    const coder = (await api('GET', '/api/agents/Coder/mirror')) as { cases: MirrorCaseView[]; total: number };
    // Scout: one case for Ada (the page's correction), one for Bob (the CLI's), each with what was wrong and what is right.
    expect(scout.cases.map(({ personId, text }) => ({ personId, text })).sort((a, b) => a.text.localeCompare(b.text))).toEqual([
      { personId: ada.personId, text: 'That was wrong: “my bike is painted blue”. It is: my bike is painted green' },
      { personId: bob.personId, text: 'That was wrong: “my desk is on floor two”. It is: my desk is on floor three' },
    ]);
    // Coder: the chat correction alone, Ada's; nothing of Scout's corrections, and nothing for Bob.
    expect(coder.cases.map(({ personId, text }) => ({ personId, text }))).toEqual([{ personId: ada.personId, text: 'actually, my teapot sits on the oak shelf by the mango window' }]);

    // A second harvest makes nothing twice.
    await roster('jobs', 'run', 'harvest', '--wait', '--json');
    expect(((await api('GET', '/api/agents/Scout/mirror')) as { total: number }).total).toBe(2);
  });
});
