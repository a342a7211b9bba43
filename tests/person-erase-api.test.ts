import { randomUUID } from 'node:crypto';
import { connectionFromUrl, createQueues } from '@roster/jobs';
import { afterEach, describe, expect, it } from 'vitest';
import { redisUrl, startApiServer, type ApiServer } from './support/api-server.js';
import { scanDatabase } from './support/scan.js';

/** A person's erasure through the HTTP API: a person for themselves, the owner for anyone, anyone else refused. */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** The server with job queues of its own in Redis, as `roster start` has them. */
async function server(): Promise<ApiServer & { queues: ReturnType<typeof createQueues> }> {
  const queues = createQueues(connectionFromUrl(redisUrl), `test-${randomUUID()}`);
  cleanups.push(async () => {
    await Promise.all(Object.values(queues.queues).map((queue) => queue.obliterate({ force: true })));
    await queues.close();
  });
  const started = Object.assign(await startApiServer({}, queues), { queues });
  cleanups.push(() => started.close());
  return started;
}

describe('POST /api/me/erase', () => {
  it('erases a member who asks, and anyone the owner names; refuses others, wrong names and the last owner, changing nothing', async () => {
    const api = await server();
    const { directory } = api.runtime.core;
    await directory.addAgent({ name: 'Scout', job: 'keeps notes' });
    const ada = await directory.addPerson({ name: 'Ada', role: 'owner' });
    const bob = await directory.addPerson({ name: 'Bob' });
    const cy = await directory.addPerson({ name: 'Cy' });
    const tell = (personId: string, text: string) =>
      api.runtime.core.handle({ channel: 'cli', conversation: { externalId: `dm-${personId}`, kind: 'dm' }, sender: { personId }, text }, { agent: 'Scout' });
    await tell(ada.id, 'remember that my kayak is named Brambleotter');
    await tell(bob.id, 'remember that my dog is named Zephyrmoose');
    await tell(cy.id, 'remember that my cat is named Quillbadger');

    const adaBrowser = await api.signIn(ada);
    const bobBrowser = await api.signIn(bob);
    const made = await api.request('POST', '/api/tokens', { as: bobBrowser, body: { name: 'laptop' } });
    expect(made.statusCode).toBe(201);
    const bobToken = { token: (made.json() as { token: string }).token };
    // Jobs queued in Redis for each of them (ids only, as every payload is).
    const extract = api.queues.queues.extract;
    for (const person of [ada, bob, cy]) await extract.add('extract', { personId: person.id, idleMinutes: 30 }, { delay: 3_600_000 });
    const queuedFor = async () => (await extract.getJobs(['delayed'])).map((job) => (job.data as { personId: string }).personId).sort();
    const words = ['zephyrmoose', 'quillbadger', 'brambleotter'];
    const before = await scanDatabase(api.test.database, words);
    expect(before['facts.content']).toBe(3);

    // Refused, changing nothing: a member naming someone else (whether they exist or not), a wrong name, the last owner, an unknown name.
    expect((await api.request('POST', '/api/me/erase', { as: bobBrowser, body: { confirm: 'Cy', person: 'Cy' } })).statusCode).toBe(403);
    expect((await api.request('POST', '/api/me/erase', { as: bobBrowser, body: { confirm: 'Nobody', person: 'Nobody' } })).statusCode).toBe(403);
    const misnamed = await api.request('POST', '/api/me/erase', { as: bobBrowser, body: { confirm: 'Rob' } });
    expect(misnamed.statusCode).toBe(400);
    expect(misnamed.json()).toMatchObject({ error: { code: 'erase_unconfirmed' } });
    const lastOwner = await api.request('POST', '/api/me/erase', { as: adaBrowser, body: { confirm: 'Ada' } });
    expect(lastOwner.statusCode).toBe(409);
    expect(lastOwner.json()).toMatchObject({ error: { code: 'last_owner' } });
    expect((await api.request('POST', '/api/me/erase', { as: adaBrowser, body: { confirm: 'Nobody', person: 'Nobody' } })).statusCode).toBe(404);
    expect(await scanDatabase(api.test.database, words)).toEqual(before);
    expect(await queuedFor()).toEqual([ada.id, bob.id, cy.id].sort());
    expect((await api.request('GET', '/api/me', { as: bobToken })).statusCode).toBe(200);

    // Bob erases himself: his session and token end with it.
    const own = await api.request('POST', '/api/me/erase', { as: bobBrowser, body: { confirm: 'bob' } });
    expect(own.statusCode).toBe(200);
    expect(own.json()).toMatchObject({ personId: bob.id, facts: 1, agents: 1, erased: { web_sessions: 1, api_tokens: 1 }, jobsRemoved: 1 });
    // His queued job is gone from Redis; the others' stay (the control).
    expect(await queuedFor()).toEqual([ada.id, cy.id].sort());
    expect(String(own.headers['set-cookie'])).toMatch(/Max-Age=0/i);
    expect((await api.request('GET', '/api/me', { as: bobBrowser })).statusCode).toBe(401);
    expect((await api.request('GET', '/api/me', { as: bobToken })).statusCode).toBe(401);

    // The owner erases Cy.
    const named = await api.request('POST', '/api/me/erase', { as: adaBrowser, body: { confirm: 'Cy', person: 'cy' } });
    expect(named.statusCode).toBe(200);
    expect(named.json()).toMatchObject({ personId: cy.id, facts: 1, jobsRemoved: 1 });
    expect(await queuedFor()).toEqual([ada.id]);

    // Their words are in no column; Ada's fact is, and is recalled; only Ada is left.
    expect(await scanDatabase(api.test.database, ['zephyrmoose', 'quillbadger', 'bob'])).toEqual({});
    expect(Object.keys(await scanDatabase(api.test.database, ['brambleotter']))).toContain('facts.content');
    expect((await tell(ada.id, 'what do you know about my kayak')).replies[0]?.text).toBe('- your kayak is named Brambleotter');
    expect((await directory.listPeople()).map((person) => person.name)).toEqual(['Ada']);
  });
});
