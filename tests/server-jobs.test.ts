import { randomUUID } from 'node:crypto';
import { connectionFromUrl, createQueues, registerSchedulers, type QueueSet } from '@roster/jobs';
import { bullBoardPath } from '@roster/server';
import { afterEach, describe, expect, it } from 'vitest';
import { redisUrl, startApiServer } from './support/api-server.js';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function queues(prefix = `test-${randomUUID()}`): Promise<QueueSet> {
  const set = createQueues(connectionFromUrl(redisUrl), prefix);
  cleanups.push(async () => {
    await Promise.all(Object.values(set.queues).map((queue) => queue.obliterate({ force: true })));
    await set.close();
  });
  return set;
}

describe('Bull Board', () => {
  it('answers the owner’s session only: a member gets 403 and no board, nobody else gets in, from whatever address', async () => {
    const set = await queues();
    await set.queues.fade.add('fade', {});
    const server = await startApiServer({}, set);
    cleanups.push(() => server.close());
    const { directory } = server.runtime.core;
    const owner = await server.signIn(await directory.addPerson({ name: 'Ada', role: 'owner' }));
    const member = await server.signIn(await directory.addPerson({ name: 'Bob', role: 'member' }));

    // No session: 401, on loopback, and with a proxy's X-Forwarded-For that claims loopback.
    for (const request of [
      { remoteAddress: '127.0.0.1' },
      { remoteAddress: '192.0.2.10', headers: { 'x-forwarded-for': '127.0.0.1' } },
    ]) {
      for (const url of [bullBoardPath, `${bullBoardPath}/api/queues`]) {
        const refused = await server.request('GET', url, request);
        expect(refused.statusCode, url).toBe(401);
        expect(refused.json()).toMatchObject({ error: { code: 'unauthenticated' } });
      }
    }
    // A host it does not answer to: refused, even with the owner's session.
    const rebound = await server.request('GET', `${bullBoardPath}/api/queues`, { as: owner, headers: { host: 'evil.example:8420' } });
    expect(rebound.statusCode).toBe(421);
    expect(rebound.json()).toMatchObject({ error: { code: 'host_not_allowed' } });

    // The owner's session: every queue, and the board's own page.
    const local = await server.request('GET', `${bullBoardPath}/api/queues`, { as: owner });
    expect(local.statusCode).toBe(200);
    const body = local.json() as { queues: Array<{ name: string; counts: Record<string, number>; readOnlyMode: boolean }> };
    expect(body.queues.map((queue) => queue.name).sort()).toEqual(['embed', 'episodes', 'erase', 'extract', 'fade', 'harvest', 'mirror', 'review', 'vacuum', 'backup'].sort());
    expect(body.queues.find((queue) => queue.name === 'fade')).toMatchObject({ counts: expect.objectContaining({ waiting: 1 }), readOnlyMode: false });
    // The board's page: nothing from another origin (no font stylesheet), under a strict policy.
    const board = await server.request('GET', `${bullBoardPath}/`, { as: owner });
    expect(board.statusCode).toBe(200);
    expect(board.headers['content-type']).toMatch(/^text\/html/);
    expect(board.body).toContain('<div id="root">');
    expect(board.body).not.toMatch(/https?:\/\//);
    expect(board.body).not.toMatch(/ style=/);
    expect(board.headers['content-security-policy']).toMatch(/default-src 'self'; script-src 'self'; style-src 'self';/);
    expect(board.headers['content-security-policy']).not.toContain('unsafe');
    // The owner's changes must come from a page of this server (its Origin): another site's form cannot make one.
    const forged = await server.request('PUT', `${bullBoardPath}/api/queues/fade/pause`, { as: owner, csrf: false });
    expect(forged.statusCode).toBe(403);
    expect(forged.json()).toMatchObject({ error: { code: 'csrf_failed' } });
    const elsewhere = await server.request('PUT', `${bullBoardPath}/api/queues/fade/pause`, { as: owner, csrf: false, headers: { origin: 'http://evil.example' } });
    expect(elsewhere.statusCode).toBe(403);
    expect(await set.queues.fade.isPaused()).toBe(false);
    const paused = await server.request('PUT', `${bullBoardPath}/api/queues/fade/pause`, { as: owner, csrf: false, headers: { origin: 'http://localhost' } });
    expect(paused.statusCode).toBe(200);
    expect(await set.queues.fade.isPaused()).toBe(true);

    // A member: no board at all (its jobs name other people's person and conversation ids), and no change.
    for (const url of [bullBoardPath, `${bullBoardPath}/`, `${bullBoardPath}/api/queues`, `${bullBoardPath}/api/redis/stats`, '/admin/queues-read-only/api/queues']) {
      const refused = await server.request('GET', url, { as: member });
      const gone = url.startsWith('/admin/queues-read-only');
      expect(refused.statusCode, url).toBe(gone ? 404 : 403);
      expect(refused.body, url).not.toContain('"queues"');
      if (!gone) expect(refused.json(), url).toMatchObject({ error: { code: 'owner_required', message: 'Bob is a member: only an owner may do this.' } });
    }
    const memberResume = await server.request('PUT', `${bullBoardPath}/api/queues/fade/resume`, { as: member, csrf: false, headers: { origin: 'http://localhost' } });
    expect(memberResume.statusCode).toBe(403);
    expect(memberResume.json()).toMatchObject({ error: { code: 'owner_required' } });
    expect(await set.queues.fade.isPaused()).toBe(true);
  });
});

describe('schedules', () => {
  it('registers the nightly, idle and vacuum schedules once, however many workers start', async () => {
    const prefix = `test-${randomUUID()}`;
    const first = await queues(prefix);
    const second = createQueues(connectionFromUrl(redisUrl), prefix);
    cleanups.push(() => second.close());
    const schedule = { hour: 4, timezone: 'Europe/Rome', idleCheckMs: 600_000, idleMinutes: 30, vacuumEveryMs: 3_600_000 };
    await Promise.all([registerSchedulers(first, schedule), registerSchedulers(second, schedule), registerSchedulers(first, schedule)]);

    const schedulers = (await Promise.all(Object.values(first.queues).map((queue) => queue.getJobSchedulers()))).flat();
    expect(schedulers.map((scheduler) => scheduler.key).sort()).toEqual([
      'idle-episodes',
      'idle-extract',
      'nightly-fade',
      'nightly-harvest',
      'nightly-mirror',
      'nightly-review',
      'every-vacuum',
    ].sort());
    const mirror = schedulers.find((scheduler) => scheduler.key === 'nightly-mirror');
    expect(mirror).toMatchObject({ pattern: '20 4 * * *', tz: 'Europe/Rome' });
  });
});
