import { randomUUID } from 'node:crypto';
import type { Person } from '@roster/core';
import { apiTokenPrefix, createLoginLink, csrfTokenFor, sessionCookie } from '@roster/server';
import { pagePaths } from '@roster/web';
import { describe, expect, it, vi } from 'vitest';
import { startApiServer } from './support/api-server.js';
import { ada, answeredNoStack, answers, bob, call, expectError, member, owner, server, useApiServer } from './support/api-suite.js';

/**
 * The HTTP API through its public door, requests injected as a browser or a
 * script would send them (tests/support/api-suite.ts). Every answer is
 * checked for a stack: none may carry one under the default configuration.
 * Here: the document, sessions and tokens, sign-in, the Host allow-list, the
 * page shell and errors; memory, agents, people, lessons and the audit are in
 * api-resources.test.ts.
 */
useApiServer();

/** Every route the document lists, with sample values for its path parameters. */
async function documentedRoutes(): Promise<Array<{ method: string; url: string; access: 'public' | 'signed-in' }>> {
  const document = (await call('GET', '/api/openapi.json', { as: owner })).json() as { paths: Record<string, Record<string, { security: unknown[] }>> };
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({
      method: method.toUpperCase(),
      url: path.replace('{name}', 'Nobody').replace('{id}', randomUUID()).replace('{channel}', 'discord'),
      access: operation.security.length === 0 ? ('public' as const) : ('signed-in' as const),
    })),
  );
}

describe('the OpenAPI document', () => {
  it('describes every route of the contract, generated from the same schemas that validate them', async () => {
    const response = await call('GET', '/api/openapi.json', { as: owner });
    expect(response.statusCode).toBe(200);
    const document = response.json() as { openapi: string; paths: Record<string, Record<string, any>>; components: { schemas: Record<string, unknown> } };
    expect(document.openapi).toBe('3.1.0');
    const operations = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
    expect(operations.sort()).toEqual(
      [
        'POST /api/login',
        'GET /api/me',
        'GET /api/me/export',
        'POST /api/me/erase',
        'POST /api/logout',
        'POST /api/tokens',
        'GET /api/tokens',
        'DELETE /api/tokens/{id}',
        'GET /api/agents',
        'POST /api/agents',
        'PATCH /api/agents/{name}',
        'POST /api/agents/{name}/archive',
        'POST /api/agents/{name}/restore',
        'POST /api/agents/{name}/purge',
        'GET /api/engines',
        'POST /api/engines/test',
        'POST /api/chat',
        'GET /api/agents/{name}/memory',
        'GET /api/agents/{name}/facts/{id}/history',
        'POST /api/agents/{name}/facts/{id}/correct',
        'POST /api/agents/{name}/facts/{id}/update',
        'POST /api/agents/{name}/facts/{id}/confirm',
        'POST /api/agents/{name}/facts/{id}/forget',
        'GET /api/approvals',
        'POST /api/approvals/{id}/approve',
        'POST /api/approvals/{id}/reject',
        'GET /api/agents/{name}/lessons',
        'POST /api/lessons/{id}/retire',
        'GET /api/agents/{name}/mirror',
        'GET /api/people',
        'POST /api/people',
        'POST /api/people/{name}/link-code',
        'GET /api/channels',
        'POST /api/channels/{channel}/credentials',
        'DELETE /api/channels/{channel}/credentials',
        'POST /api/channels/{channel}/binding',
        'DELETE /api/channels/{channel}/binding',
        'GET /api/chat/history',
        'GET /api/channels/{channel}/link',
        'GET /api/audit',
        'POST /api/audit/verify',
      ].sort(),
    );
    const addAgent = document.paths['/api/agents']!.post;
    expect(addAgent.requestBody.content['application/json'].schema).toMatchObject({ type: 'object', required: expect.arrayContaining(['name', 'job']) });
    expect(addAgent.responses['201'].content['application/json'].schema.properties).toHaveProperty('createdAt');
    expect(addAgent.responses['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(document.paths['/api/chat']!.post.responses['200'].content).toHaveProperty('text/event-stream');
    expect(document.paths['/api/agents/{name}/memory']!.get.parameters.map((parameter: { name: string }) => parameter.name).sort()).toEqual(['name', 'person', 'recordedAt', 'validAt']);
    expect(document.components.schemas).toHaveProperty('Error');
  });
});

describe('every route needs a session or a token', () => {
  it('answers 401 without one, on every route but login', async () => {
    const routes = await documentedRoutes();
    // Positive control: the list is the whole API, not an empty loop.
    expect(routes.length).toBe(41);
    expect(routes.filter((route) => route.access === 'public').map((route) => route.url)).toEqual(['/api/login']);
    for (const route of routes.filter((candidate) => candidate.access === 'signed-in')) {
      const response = await call(route.method, route.url, route.method === 'GET' ? {} : { body: {} });
      expectError(response, 401, 'unauthenticated');
    }
    expectError(await call('GET', '/api/openapi.json'), 401, 'unauthenticated');
    // A cookie that names no session, and a token that names none, are no one.
    expectError(await call('GET', '/api/me', { headers: { cookie: `${sessionCookie}=${'x'.repeat(43)}` } }), 401, 'unauthenticated');
    expectError(await call('GET', '/api/me', { as: { token: `${apiTokenPrefix}${'y'.repeat(43)}` } }), 401, 'unauthenticated');
    // Positive control: the same route with a session answers.
    expect((await call('GET', '/api/me', { as: owner })).statusCode).toBe(200);
  });

  it('refuses a change made with the session cookie but without its CSRF token, and takes it with the token', async () => {
    const routes = (await documentedRoutes()).filter((route) => route.access === 'signed-in' && route.method !== 'GET');
    expect(routes.length).toBe(25);
    // A session of its own, since logging out (last) ends it.
    const browser = await server.signIn(ada);
    const last = (route: { url: string }) => (route.url === '/api/logout' ? 1 : 0);
    for (const route of routes.sort((a, b) => last(a) - last(b))) {
      expectError(await call(route.method, route.url, { as: browser, csrf: false, body: {} }), 403, 'csrf_failed');
      expectError(await call(route.method, route.url, { as: browser, csrf: 'not-the-token', body: {} }), 403, 'csrf_failed');
      // With the header, the request gets past the guard (to its own answer: done, invalid, not found…).
      const passed = await call(route.method, route.url, { as: browser, body: {} });
      expect([401, 403], `${route.method} ${route.url}: ${passed.body}`).not.toContain(passed.statusCode);
    }
    // Another session's token is not this one's.
    expectError(await call('POST', '/api/people', { as: owner, csrf: member.csrfToken, body: { name: 'Cleo' } }), 403, 'csrf_failed');
    const made = await call('POST', '/api/people', { as: owner, body: { name: 'Cleo' } });
    expect(made.statusCode).toBe(201);
    expect(made.json()).toMatchObject({ name: 'Cleo', role: 'member' });
  });

  it('lets a bearer token change things without a CSRF token, and stores only its hash', async () => {
    const made = await call('POST', '/api/tokens', { as: owner, body: { name: 'script' } });
    expect(made.statusCode).toBe(201);
    const { id, token } = made.json() as { id: string; token: string };
    expect(token).toMatch(/^rst_[A-Za-z0-9_-]{43}$/);
    expect((await call('GET', '/api/me', { as: { token } })).json()).toMatchObject({ person: { name: 'Ada', role: 'owner' }, csrfToken: null });
    const agent = await call('POST', '/api/agents', { as: { token }, body: { name: 'Tokened', job: 'made by a script' } });
    expect(agent.statusCode).toBe(201);
    const listed = (await call('GET', '/api/tokens', { as: owner })).json() as { tokens: Array<Record<string, unknown>> };
    expect(listed.tokens.map((entry) => entry.name)).toContain('script');
    expect(JSON.stringify(listed)).not.toContain(token);
    const stored = await server.test.database.adminScope('test: read what is stored of tokens', async (tx) => (await tx.query<{ token_hash: string }>('select token_hash from api_tokens')).rows);
    expect(stored.length).toBeGreaterThan(0);
    expect(JSON.stringify(stored)).not.toContain(token.slice(apiTokenPrefix.length));
    // Another person cannot revoke it; its person can, and then it opens nothing.
    expectError(await call('DELETE', `/api/tokens/${id}`, { as: member }), 404, 'token_not_found');
    expect((await call('DELETE', `/api/tokens/${id}`, { as: owner })).statusCode).toBe(200);
    expectError(await call('GET', '/api/me', { as: { token } }), 401, 'unauthenticated');
  });

  it('keeps a member to their own part: agents to talk to, not the owner’s tools', async () => {
    expect((await call('GET', '/api/agents', { as: member })).statusCode).toBe(200);
    for (const [method, url] of [
      ['POST', '/api/agents'],
      ['GET', '/api/people'],
      ['GET', '/api/approvals'],
      ['GET', '/api/audit'],
      ['GET', '/api/engines'],
      ['GET', '/api/channels'],
      ['POST', '/api/channels/slack/binding'],
      ['GET', '/api/agents/Scout/mirror'],
      ['GET', '/api/agents/Scout/lessons'],
    ] as const) {
      expectError(await call(method, url, { as: member, ...(method === 'POST' ? { body: { name: 'Nope', job: 'x' } } : {}) }), 403, 'owner_required');
      // Positive control: the owner is let in.
      const asOwner = await call(method, url, { as: owner, ...(method === 'POST' ? { body: { name: `Owned${answers.length}`, job: 'x' } } : {}) });
      expect([200, 201], `${method} ${url}: ${asOwner.body}`).toContain(asOwner.statusCode);
    }
  });
});

describe('sign-in', () => {
  it('opens a session once per login link, with an HttpOnly, SameSite=Strict cookie', async () => {
    const { token } = await createLoginLink(server.test.database, bob.id);
    const first = await call('POST', '/api/login', { body: { token } });
    expect(first.statusCode).toBe(200);
    const cookie = String(first.headers['set-cookie']);
    expect(cookie).toMatch(new RegExp(`^${sessionCookie}=[A-Za-z0-9_-]{43}; Path=/; Max-Age=\\d+; HttpOnly; SameSite=Strict$`));
    const body = first.json() as { person: Person; csrfToken: string };
    expect(body.person).toEqual({ id: bob.id, name: 'Bob', role: 'member' });
    expect(body.csrfToken).toBe(csrfTokenFor(cookie.split(';')[0]!.split('=')[1]!));
    // The same link again: refused, and no cookie.
    const again = await call('POST', '/api/login', { body: { token } });
    expectError(again, 401, 'login_link_invalid');
    expect(again.headers['set-cookie']).toBeUndefined();
  });

  it('refuses an expired link', async () => {
    // A link made sixteen minutes ago: fifteen is its life.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() - 16 * 60 * 1000);
    const old = await createLoginLink(server.test.database, ada.id);
    vi.useRealTimers();
    expectError(await call('POST', '/api/login', { body: { token: old.token } }), 401, 'login_link_invalid');
    // Positive control: one made now works.
    const fresh = await createLoginLink(server.test.database, ada.id);
    expect((await call('POST', '/api/login', { body: { token: fresh.token } })).statusCode).toBe(200);
  });

  it('ends the session on logout', async () => {
    const browser = await server.signIn(bob);
    expect((await call('GET', '/api/me', { as: browser })).statusCode).toBe(200);
    const out = await call('POST', '/api/logout', { as: browser });
    expect(out.statusCode).toBe(200);
    expect(String(out.headers['set-cookie'])).toMatch(/Max-Age=0/);
    expectError(await call('GET', '/api/me', { as: browser }), 401, 'unauthenticated');
  });

  it('waits out a source of many failed logins, and not another', async () => {
    for (let attempt = 0; attempt < 10; attempt += 1) {
      expectError(await call('POST', '/api/login', { body: { token: 'z'.repeat(43) }, remoteAddress: '192.0.2.44' }), 401, 'login_link_invalid');
    }
    const { token } = await createLoginLink(server.test.database, ada.id);
    expectError(await call('POST', '/api/login', { body: { token }, remoteAddress: '192.0.2.44' }), 429, 'rate_limited');
    expect((await call('POST', '/api/login', { body: { token }, remoteAddress: '192.0.2.45' })).statusCode).toBe(200);
  });

  it('marks the cookie Secure only when a trusted proxy says the request came over TLS', async () => {
    const proxied = await startApiServer({ TRUST_PROXY: 'loopback' });
    const direct = await startApiServer();
    try {
      for (const [target, secure] of [
        [proxied, true],
        [direct, false],
      ] as const) {
        const person = await target.runtime.core.directory.addPerson({ name: 'Ada', role: 'owner' });
        const { token } = await createLoginLink(target.test.database, person.id);
        const response = await target.request('POST', '/api/login', { body: { token }, headers: { 'x-forwarded-proto': 'https' }, remoteAddress: '127.0.0.1' });
        expect(response.statusCode).toBe(200);
        expect(String(response.headers['set-cookie']).endsWith('; Secure')).toBe(secure);
      }
    } finally {
      await proxied.close();
      await direct.close();
    }
  });
});

describe('the Host allow-list', () => {
  it('refuses a host it does not answer to, even with a session, and answers its own names', async () => {
    expectError(await call('GET', '/api/me', { as: owner, headers: { host: 'evil.example:8420' } }), 421, 'host_not_allowed');
    expectError(await call('GET', '/', { headers: { host: 'evil.example' } }), 421, 'host_not_allowed');
    for (const host of ['localhost:8420', '127.0.0.1:8420', '[::1]:8420', 'LOCALHOST']) {
      expect((await call('GET', '/api/me', { as: owner, headers: { host } })).statusCode, host).toBe(200);
    }
    const named = await startApiServer({ ROSTER_ALLOWED_HOSTS: 'roster.example.com' });
    try {
      expect((await named.request('GET', '/', { headers: { host: 'roster.example.com' } })).statusCode).toBe(200);
      expect((await named.request('GET', '/', { headers: { host: 'other.example.com' } })).statusCode).toBe(421);
    } finally {
      await named.close();
    }
  });
});

describe('the page shell', () => {
  it('answers every address of the page with a policy that lets it load and send only to its own origin', async () => {
    // Positive control: the list is the page's every address, not an empty loop.
    expect(pagePaths.length).toBeGreaterThan(5);
    for (const path of pagePaths) {
      const shell = await call('GET', path);
      expect(shell.statusCode, path).toBe(200);
      expect(shell.headers['content-type']).toMatch(/^text\/html/);
      const directives = Object.fromEntries(
        String(shell.headers['content-security-policy'])
          .split(';')
          .map((directive) => directive.trim().split(/\s+/))
          .map(([name, ...sources]) => [name, sources]),
      );
      expect(directives, path).toEqual({
        'default-src': ["'self'"],
        'script-src': ["'self'"],
        'style-src': ["'self'"],
        'img-src': ["'self'", 'data:'],
        'connect-src': ["'self'"],
        'object-src': ["'none'"],
        'base-uri': ["'none'"],
        'form-action': ["'self'"],
        'frame-ancestors': ["'none'"],
      });
      expect(shell.headers['referrer-policy']).toBe('no-referrer');
      expect(shell.headers['x-content-type-options']).toBe('nosniff');
      // What the shell itself names is on this server: its hashed assets, no address with a host, no inline script.
      expect(shell.body).toMatch(/<script[^>]* src="\/assets\/[^"]+\.js"/);
      expect(shell.body).not.toMatch(/(?:src|href)="(?:[a-z]+:)?\/\//i);
      expect(shell.body).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    }
  });
});


describe('errors', () => {
  it('never carries a stack by default, even when the server fails; NODE_ENV=development shows it', async () => {
    for (const [env, stack] of [
      [{}, false],
      [{ NODE_ENV: 'development' }, true],
    ] as const) {
      const target = await startApiServer(env);
      const person = await target.runtime.core.directory.addPerson({ name: 'Ada', role: 'owner' });
      const browser = await target.signIn(person);
      expect((await target.request('GET', '/api/agents', { as: browser })).statusCode).toBe(200);
      // The database goes away under the running server: a fault, not a refusal.
      await target.test.database.close();
      const failed = await target.request('GET', '/api/agents', { as: browser });
      expect(failed.statusCode).toBe(500);
      const body = failed.json() as { error: { code: string; message: string; stack?: string } };
      expect(body.error.code).toBe('internal');
      expect(body.error.message).toBe('The server failed to answer; see its log.');
      if (stack) expect(body.error.stack).toMatch(/database was closed[\s\S]*\n\s+at /);
      else expect(body.error).not.toHaveProperty('stack');
      // The same from another route that reads the database.
      const people = await target.request('GET', '/api/people', { as: browser });
      expect(people.statusCode).toBe(500);
      expect(Object.keys((people.json() as { error: object }).error).sort()).toEqual(stack ? ['code', 'message', 'stack'] : ['code', 'message']);
      await target.close();
    }
  });
});

answeredNoStack(150);
