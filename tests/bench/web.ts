/**
 * The web door as the benchmarks use it: a person signed in through a login
 * link, and turns through `POST /api/chat` with the whole event stream read.
 */
import http from 'node:http';
import type { Database } from '@roster/db';
import { createLoginLink } from '@roster/server';

/** A signed-in person's session cookie and CSRF token. */
export interface WebSession {
  cookie: string;
  csrfToken: string;
}

/**
 * One POST on a connection of its own (no keep-alive: a pooled socket the
 * server closed while idle would fail the next turn), the whole body read.
 */
function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const request = http.request(
      url,
      { method: 'POST', agent: false, headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

/** Sign a person in on the server at `base` with a login link made for them in the database. */
export async function signIn(database: Database, base: string, personId: string): Promise<WebSession> {
  const { token } = await createLoginLink(database, personId);
  const response = await post(`${base}/api/login`, { token });
  if (response.status !== 200) throw new Error(`signing in failed: ${response.status} ${response.body}`);
  return { cookie: String(response.headers['set-cookie']?.[0]).split(';')[0]!, csrfToken: (JSON.parse(response.body) as { csrfToken: string }).csrfToken };
}

/** One turn through `POST /api/chat`; rejects unless the agent answered and the stream ended. */
export async function chat(base: string, session: WebSession, body: { message: string; agent?: string }): Promise<void> {
  const response = await post(`${base}/api/chat`, body, { cookie: session.cookie, 'x-csrf-token': session.csrfToken });
  if (response.status !== 200 || !response.body.includes('event: turn-end') || !response.body.includes('event: done')) {
    throw new Error(`POST ${base}/api/chat answered ${response.status}: ${response.body.slice(0, 300)}`);
  }
}
