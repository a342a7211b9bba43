import { isUtf8 } from 'node:buffer';
import net, { type AddressInfo } from 'node:net';
import type { Person } from '@roster/core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer, type Browser } from './support/api-server.js';
import { kindsFor, type HostileRequest, type Route } from './support/hostile-values.js';

/**
 * Hostile input on every route of the HTTP API, generated with fast-check:
 * random and oversized bodies, wrong types, NUL bytes and lone surrogates,
 * JSON nested 10,000 deep, garbage in path and query, huge headers; over
 * Fastify's inject (as the owner with a session and its CSRF token, so that
 * validation is what answers, and without credentials), then over a real
 * socket with raw bytes the HTTP parser sees (invalid UTF-8, headers past
 * Node's limit, malformed requests). Every answer: no 500, no stack, the
 * error shape; every refused request writes no row of any table; a valid
 * request is answered correctly afterwards. The routes come from the
 * OpenAPI document, so a new route is covered without editing this file.
 */
let server: ApiServer;
let ada: Person;
let owner: Browser;
let routes: Route[] = [];
/** Cases run, by route (or raw kind) and kind, printed at the end. */
const cases = new Map<string, Map<string, number>>();

interface Answer {
  statusCode: number;
  body: string;
}

/** Owner runs per kind and route, anonymous runs per kind and route, raw socket runs per kind. */
const ownerRuns = 4;
const anonymousRuns = 2;
const rawRuns = 15;

function count(subject: string, kind: string): void {
  const kinds = cases.get(subject) ?? new Map<string, number>();
  kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  cases.set(subject, kinds);
}

// ---------------------------------------------------------------------------
// What every answer must be.

const stackPattern = /\n\s+at \S|node_modules|\.[cm]?[jt]s:\d+:\d+/;

function checkAnswer(label: string, answer: Answer): void {
  expect(answer.statusCode, `${label}: ${answer.body.slice(0, 300)}`).toBeLessThan(500);
  expect(answer.body, label).not.toMatch(stackPattern);
  if (answer.statusCode < 400) return;
  let body: { error?: { code?: unknown; message?: unknown } };
  try {
    body = JSON.parse(answer.body) as typeof body;
  } catch {
    throw new Error(`${label}: ${answer.statusCode} answered with a body that is not the error shape: ${JSON.stringify(answer.body.slice(0, 200))}`);
  }
  expect(Object.keys(body), label).toEqual(['error']);
  expect(Object.keys(body.error!).sort(), label).toEqual(['code', 'message']);
  expect(typeof body.error!.code, label).toBe('string');
  expect(typeof body.error!.message, label).toBe('string');
}

/** The rows of every table of the database, by table. */
async function tableRows(): Promise<Record<string, number>> {
  return server.test.database.adminScope('test: count the rows of every table', async (tx) => {
    const { rows: tables } = await tx.query<{ name: string }>(
      `select quote_ident(schemaname) || '.' || quote_ident(tablename) as name from pg_tables where schemaname not in ('pg_catalog', 'information_schema') order by 1`,
    );
    const { rows } = await tx.query<{ name: string; n: number }>(tables.map((table) => `select '${table.name}' as name, count(*)::int as n from ${table.name}`).join(' union all '));
    return Object.fromEntries(rows.map((row) => [row.name, Number(row.n)]));
  });
}

// ---------------------------------------------------------------------------
// ---------------------------------------------------------------------------

beforeAll(async () => {
  server = await startApiServer();
  const { directory } = server.runtime.core;
  ada = await directory.addPerson({ name: 'Ada', role: 'owner' });
  await directory.addAgent({ name: 'Scout', job: 'finds things' });
  owner = await server.signIn(ada);
  const document = (await server.request('GET', '/api/openapi.json', { as: owner })).json() as {
    paths: Record<string, Record<string, { security: unknown[]; parameters?: Array<{ name: string; in: string }>; requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> } }>>;
  };
  routes = Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({
      method: method.toUpperCase(),
      path,
      access: operation.security.length === 0 ? ('public' as const) : ('signed-in' as const),
      fields: Object.keys(operation.requestBody?.content['application/json']?.schema.properties ?? {}),
      query: (operation.parameters ?? []).filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name),
    })),
  );
});

afterAll(async () => {
  const lines = [...cases].map(([subject, kinds]) => `${subject}: ${[...kinds].map(([kind, n]) => `${kind} ${n}`).join(', ')}`);
  const total = [...cases.values()].reduce((sum, kinds) => sum + [...kinds.values()].reduce((a, b) => a + b, 0), 0);
  console.log(`hostile HTTP cases run (${total} in all):\n${lines.join('\n')}`);
  await server?.close();
});

function inject(request: HostileRequest, as: Browser | null, method: string): Promise<Answer> {
  const headers: Record<string, string> = { ...request.headers };
  if (request.contentType !== undefined) headers['content-type'] = request.contentType;
  if (as !== null) {
    headers.cookie = as.cookie;
    headers['x-csrf-token'] = as.csrfToken;
  }
  return server.app
    .inject({
      method: method as 'GET',
      url: request.url,
      headers,
      // Not the loopback address the final sign-in comes from: failed logins here are limited apart from it.
      remoteAddress: '192.0.2.7',
      ...(request.payload === undefined ? {} : { payload: request.payload }),
    })
    .then((response) => ({ statusCode: response.statusCode, body: response.body }));
}

describe('hostile requests on every documented route', () => {
  it('as the owner: no 500, no stack, the error shape, and a refused request writes nothing', async () => {
    // Positive control: the document lists the whole API, and routes with bodies name their fields.
    expect(routes.length).toBeGreaterThanOrEqual(38);
    expect(routes.find((route) => route.method === 'POST' && route.path === '/api/agents')?.fields.sort()).toEqual(['engine', 'job', 'name']);
    let rows = await tableRows();
    let accepted = 0;
    let runs = 0;
    expect(rows['public.people']).toBeGreaterThan(0);
    for (const route of routes) {
      const subject = `${route.method} ${route.path}`;
      for (const [kind, arbitrary] of Object.entries(kindsFor(route))) {
        const answers: string[] = [];
        await fc.assert(
          fc.asyncProperty(arbitrary, async (request) => {
            count(subject, `owner/${kind}`);
            // Logging out ends the session it is sent with: that route gets a session of its own each time, and is counted case by case.
            const logout = route.path === '/api/logout';
            const as = logout ? await server.signIn(ada) : owner;
            if (logout) rows = await tableRows();
            const answer = await inject(request, as, route.method);
            checkAnswer(`${subject} ${kind} ${request.url.slice(0, 200)}`, answer);
            answers.push(`${answer.statusCode} ${answer.body.slice(0, 120)}`);
            if (logout) {
              const after = await tableRows();
              if (answer.statusCode >= 400) expect(after, `${subject} ${kind}: ${answer.statusCode} ${answer.body.slice(0, 200)}`).toEqual(rows);
              rows = after;
            }
          }),
          { numRuns: ownerRuns },
        );
        // The rows are counted once per kind and route: refusals and reads change nothing. A run with an
        // accepted change (a valid body among the random ones) may write what it is for; it is only re-counted.
        runs += 1;
        const after = await tableRows();
        if (route.method === 'GET' || answers.every((answer) => Number(answer.slice(0, 3)) >= 400)) expect(after, `${subject} ${kind}: ${answers.join(' | ')}`).toEqual(rows);
        else accepted += 1;
        rows = after;
      }
    }
    console.log(`hostile HTTP as the owner: ${accepted} of ${runs} runs (route and kind) held an accepted change and were re-counted, not compared`);
  });

  it('without credentials: refused (401 past the router), no stack, nothing written', async () => {
    const rows = await tableRows();
    for (const route of routes) {
      const subject = `${route.method} ${route.path}`;
      for (const [kind, arbitrary] of Object.entries(kindsFor(route))) {
        await fc.assert(
          fc.asyncProperty(arbitrary, async (request) => {
            count(subject, `anonymous/${kind}`);
            const answer = await inject(request, null, route.method);
            checkAnswer(`${subject} anonymous ${kind}`, answer);
            expect(answer.statusCode).toBeGreaterThanOrEqual(400);
            if (route.access === 'signed-in' && kind !== 'bad parameters') expect(answer.statusCode, `${subject} ${kind}: ${answer.body}`).toBe(401);
          }),
          { numRuns: anonymousRuns },
        );
      }
    }
    expect(await tableRows()).toEqual(rows);
  });

  it('keeps serving: after the run, a valid request is answered correctly', async () => {
    expect((await server.request('GET', '/api/me', { as: owner })).json()).toMatchObject({ person: { name: 'Ada', role: 'owner' } });
    const made = await server.request('POST', '/api/agents', { as: owner, body: { name: 'After', job: 'is made after the storm' } });
    expect(made.statusCode, made.body).toBe(201);
    const agents = (await server.request('GET', '/api/agents', { as: owner })).json() as { agents: Array<{ name: string }> };
    expect(agents.agents.map((agent) => agent.name)).toContain('After');
    const again = await server.signIn(ada);
    expect((await server.request('GET', '/api/me', { as: again })).statusCode).toBe(200);
  });
});

// ---------------------------------------------------------------------------
// Over a real socket: what only the HTTP parser sees.

/** Write raw bytes to the server and read its whole answer (the server or a timeout closes the connection). */
function rawExchange(port: number, bytes: Buffer): Promise<Answer & { raw: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.setTimeout(5_000, () => socket.destroy());
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const raw = Buffer.concat(chunks).toString('latin1');
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(raw);
      if (status === null) return raw === '' ? resolve({ statusCode: 0, body: '', raw }) : reject(new Error(`not an HTTP answer: ${JSON.stringify(raw.slice(0, 200))}`));
      const split = raw.indexOf('\r\n\r\n');
      resolve({ statusCode: Number(status[1]), body: split === -1 ? '' : Buffer.from(raw.slice(split + 4), 'latin1').toString('utf8'), raw });
    });
    socket.write(bytes, () => socket.end());
  });
}

const invalidUtf8 = fc.constantFrom([0xff], [0xfe], [0xc3, 0x28], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80], [0xf4, 0x90, 0x80, 0x80]);

/** Printable text with invalid UTF-8 sequences spliced in. */
const bytesWithInvalidUtf8 = fc.array(fc.oneof(invalidUtf8, fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 5 }).map((text) => [...Buffer.from(text.replace(/["\\\r\n]/g, 'x'))])), { minLength: 1, maxLength: 6 }).map((parts) => Buffer.from(parts.flat()))
  // Pieces can join into valid UTF-8 (a truncated E2 82 before a lone 80 is '₀'): keep only what no decoder takes.
  .filter((bytes) => !isUtf8(bytes));

describe('hostile bytes over a real socket', () => {
  it('answers invalid UTF-8, huge headers and malformed HTTP without a 500 or a stack, writes nothing, and keeps serving', async () => {
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (server.app.server.address() as AddressInfo).port;
    const host = `127.0.0.1:${port}`;
    const session = `Cookie: ${owner.cookie}\r\nX-CSRF-Token: ${owner.csrfToken}\r\n`;
    const post = (path: string, body: Buffer, extra = '') =>
      Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\nHost: ${host}\r\n${session}${extra}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`), body]);

    // Positive control: a valid request over the socket is answered.
    const me = await rawExchange(port, Buffer.from(`GET /api/me HTTP/1.1\r\nHost: ${host}\r\n${session}Connection: close\r\n\r\n`));
    expect(me.statusCode, me.raw).toBe(200);
    const rows = await tableRows();

    const kinds: Record<string, fc.Arbitrary<Buffer>> = {
      // A body that is JSON but for bytes that are no UTF-8: refused, not stored with U+FFFD in their place.
      'invalid UTF-8 body': fc
        .record({
          bytes: bytesWithInvalidUtf8,
          target: fc.constantFrom({ path: '/api/people', field: 'name' }, { path: '/api/agents', field: 'name' }, { path: '/api/tokens', field: 'name' }, { path: '/api/login', field: 'token' }),
        })
        .map(({ bytes, target: { path, field } }) => post(path, Buffer.concat([Buffer.from(`{"${field}":"`), bytes, Buffer.from(path === '/api/agents' ? '","job":"j"}' : '"}')]))),
      'invalid UTF-8 in path and headers': fc
        .record({ bytes: bytesWithInvalidUtf8, where: fc.constantFrom('path', 'query', 'header', 'cookie') })
        .map(({ bytes, where }) =>
          Buffer.concat([
            Buffer.from('GET /api/'),
            where === 'path' ? bytes : Buffer.from('agents'),
            Buffer.from(where === 'query' ? '?all=' : ''),
            where === 'query' ? bytes : Buffer.alloc(0),
            Buffer.from(` HTTP/1.1\r\nHost: ${host}\r\n${where === 'cookie' ? '' : session}`),
            Buffer.from(where === 'header' ? 'X-Junk: ' : where === 'cookie' ? `Cookie: ${owner.cookie}` : ''),
            where === 'header' || where === 'cookie' ? Buffer.concat([bytes, Buffer.from('\r\n')]) : Buffer.alloc(0),
            Buffer.from('Connection: close\r\n\r\n'),
          ]),
        ),
      'huge headers': fc
        .record({ length: fc.integer({ min: 17 * 1024, max: 256 * 1024 }), many: fc.boolean() })
        .map(({ length, many }) =>
          Buffer.from(
            `GET /api/me HTTP/1.1\r\nHost: ${host}\r\n${session}${many ? Array.from({ length: Math.ceil(length / 20) }, (_, index) => `X-H${index}: ${'v'.repeat(12)}\r\n`).join('') : `X-Junk: ${'a'.repeat(length)}\r\n`}Connection: close\r\n\r\n`,
          ),
        ),
      'malformed HTTP': fc.oneof(
        fc.constantFrom(
          'GET\r\n\r\n',
          'GET /api/me HTTP/9.9\r\n\r\n',
          'G\u0000T /api/me HTTP/1.1\r\n\r\n',
          `GET /api/me HTTP/1.1\r\nHost: ${host}\r\nNo colon here\r\n\r\n`,
          `POST /api/people HTTP/1.1\r\nHost: ${host}\r\n${session}Content-Length: abc\r\n\r\n{}`,
          `POST /api/people HTTP/1.1\r\nHost: ${host}\r\n${session}Content-Length: -5\r\n\r\n{}`,
          `POST /api/people HTTP/1.1\r\nHost: ${host}\r\n${session}Content-Length: 2\r\nContent-Length: 9\r\n\r\n{}`,
          `POST /api/people HTTP/1.1\r\nHost: ${host}\r\n${session}Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n0\r\n\r\n`,
          `POST /api/people HTTP/1.1\r\nHost: ${host}\r\n${session}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
          `POST /api/people HTTP/1.1\r\nHost: ${host}\r\n${session}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`,
          `GET /api/me HTTP/1.1\r\nHost: ${host}\r\nX-A: b\u0000c\r\n\r\n`,
          `GET /api/me HTTP/1.1\r\nHost: ${host}\r\n X-Folded: yes\r\n\r\n`,
          `GET /api/me HTTP/1.1\r\nHost: ${host}\r\nHost: evil.example\r\n\r\n`,
          `GET http://evil.example/api/me HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
          `GET /api/me HTTP/1.1\nHost: ${host}\n\n`,
          `\r\n\r\n\r\n`,
        ),
        fc.uint8Array({ minLength: 1, maxLength: 400 }).map((bytes) => Buffer.concat([Buffer.from(bytes), Buffer.from('\r\n\r\n')]).toString('latin1')),
        fc.uint8Array({ minLength: 1, maxLength: 200 }).map((bytes) => `GET /api/me HTTP/1.1\r\nHost: ${host}\r\n${Buffer.from(bytes).toString('latin1')}\r\n\r\n`),
      ).map((text) => Buffer.from(text, 'latin1')),
    };

    for (const [kind, arbitrary] of Object.entries(kinds)) {
      await fc.assert(
        fc.asyncProperty(arbitrary, async (bytes) => {
          count('raw socket', kind);
          const answer = await rawExchange(port, bytes);
          // No answer at all (the server closed a connection it could not read) is allowed; a 500 or a stack is not.
          checkAnswer(`raw ${kind}: ${JSON.stringify(bytes.toString('latin1').slice(0, 160))}`, answer);
          if (kind === 'invalid UTF-8 body') expect(answer.statusCode, answer.body).toBe(400);
        }),
        { numRuns: rawRuns },
      );
    }
    expect(await tableRows()).toEqual(rows);

    // Still serving: a valid request over a new connection is answered correctly.
    const made = await rawExchange(port, post('/api/people', Buffer.from('{"name":"Zoë"}')));
    expect(made.statusCode, made.raw).toBe(201);
    expect(JSON.parse(made.body)).toMatchObject({ name: 'Zoë', role: 'member' });
  });
});
