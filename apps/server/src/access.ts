import { isIP } from 'node:net';
import type { Config } from '@roster/config';
import type { Person } from '@roster/core';
import type { Database } from '@roster/db';
import type { FastifyRequest } from 'fastify';
import { csrfMatches, csrfTokenFor, findSession, personForApiToken, sessionCookie } from './credentials.js';
import { ApiError } from './errors.js';

/** Who a route lets in: anyone, any person signed in, or an owner. */
export type Access = 'public' | 'person' | 'owner';

/** The person behind a request, and how they proved it. */
export interface Viewer {
  person: Person;
  via: 'session' | 'token';
  /** The session's id and CSRF token; null for a bearer token. */
  sessionId: string | null;
  csrfToken: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    viewer: Viewer | null;
  }
  interface FastifyContextConfig {
    /** Who the route lets in; a route without it is public. */
    access?: Access;
  }
}

/** The cookies of a request, by name (the first of a repeated name). */
function readCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const index = part.indexOf('=');
    if (index <= 0) continue;
    const name = part.slice(0, index).trim();
    if (!cookies.has(name)) cookies.set(name, part.slice(index + 1).trim());
  }
  return cookies;
}

/**
 * The host names the server answers to: the address it is bound to,
 * localhost, 127.0.0.1, [::1], and ROSTER_ALLOWED_HOSTS. A page of another
 * name that resolves here (DNS rebinding) is refused before anything runs.
 */
export function allowedHostNames(config: Pick<Config, 'HOST' | 'ROSTER_ALLOWED_HOSTS'>): Set<string> {
  const names = new Set(['localhost', '127.0.0.1', '[::1]', ...config.ROSTER_ALLOWED_HOSTS]);
  const bound = config.HOST.toLowerCase();
  if (bound !== '0.0.0.0' && bound !== '::') names.add(isIP(bound) === 6 ? `[${bound}]` : bound);
  return names;
}

/** The host name of a Host header (as trustProxy lets Fastify read it), without its port. */
export function hostName(host: string): string {
  const value = host.trim().toLowerCase();
  if (value.startsWith('[')) return value.slice(0, value.indexOf(']') + 1);
  const colon = value.indexOf(':');
  return colon === -1 ? value : value.slice(0, colon);
}

/** Counts failures per key in a sliding window; past the limit, the key waits. */
export class FailureLimiter {
  private readonly failures = new Map<string, number[]>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Refuse with 429 when the key failed `limit` times within the window. */
  check(key: string): void {
    const now = Date.now();
    const recent = (this.failures.get(key) ?? []).filter((at) => at > now - this.windowMs);
    if (recent.length === 0) this.failures.delete(key);
    else this.failures.set(key, recent);
    if (recent.length >= this.limit) {
      throw new ApiError(429, 'rate_limited', `Too many failed attempts from here; try again in ${Math.ceil(this.windowMs / 60_000)} minutes.`);
    }
  }

  fail(key: string): void {
    // Many sources at once: forget the oldest rather than grow without bound.
    if (this.failures.size >= 10_000 && !this.failures.has(key)) this.failures.delete(this.failures.keys().next().value!);
    this.failures.set(key, [...(this.failures.get(key) ?? []), Date.now()]);
  }
}

/**
 * Who is asking: a bearer API token, else the session cookie. A credential
 * that is present but unknown, expired or revoked is no one (null).
 */
async function identify(database: Database, request: FastifyRequest): Promise<Viewer | null> {
  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)$/i.exec(authorization);
    const person = match === null ? null : await personForApiToken(database, match[1]!);
    return person === null ? null : { person, via: 'token', sessionId: null, csrfToken: null };
  }
  const token = readCookies(request.headers.cookie).get(sessionCookie);
  if (token === undefined) return null;
  const session = await findSession(database, token);
  return session === null ? null : { person: session.person, via: 'session', sessionId: session.id, csrfToken: csrfTokenFor(token) };
}

const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Let a request in as `access` says: no credential, 401; a cookie-borne
 * request that changes something without the session's `x-csrf-token`, 403;
 * a member where an owner is needed, 403. Sets `request.viewer`.
 */
export async function admit(database: Database, request: FastifyRequest, access: Access, csrf: 'token' | 'origin' = 'token'): Promise<void> {
  request.viewer = null;
  if (access === 'public') return;
  const viewer = await identify(database, request);
  if (viewer === null) {
    throw new ApiError(401, 'unauthenticated', 'Sign in first: open a login link (roster login-link prints one), or send an API token as Authorization: Bearer rst_….');
  }
  if (viewer.via === 'session' && !safeMethods.has(request.method)) {
    if (csrf === 'token') {
      const token = readCookies(request.headers.cookie).get(sessionCookie)!;
      const header = request.headers['x-csrf-token'];
      if (!csrfMatches(token, typeof header === 'string' ? header : undefined)) {
        throw new ApiError(403, 'csrf_failed', 'This request needs the x-csrf-token header of your session (GET /api/me gives it).');
      }
    } else if (!sameOrigin(request)) {
      throw new ApiError(403, 'csrf_failed', 'A change with the session cookie must come from a page of this server (its Origin header).');
    }
  }
  if (access === 'owner' && viewer.person.role !== 'owner') {
    throw new ApiError(403, 'owner_required', `${viewer.person.name} is a ${viewer.person.role}: only an owner may do this.`);
  }
  request.viewer = viewer;
}

/**
 * Whether a request came from a page of this server: its Origin names this
 * host. Browsers send Origin on every request that changes something, and a
 * page of another site cannot forge it. For pages that cannot send the CSRF
 * header (Bull Board's).
 */
function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  try {
    const from = new URL(origin);
    const to = new URL(`${request.protocol}://${request.host}`);
    const port = (url: URL) => url.port || (url.protocol === 'https:' ? '443' : '80');
    return from.hostname === to.hostname && port(from) === port(to);
  } catch {
    return false;
  }
}

/** The Set-Cookie value of a new session: HttpOnly, SameSite=Strict, Secure over TLS. */
export function sessionCookieHeader(token: string, maxAgeSeconds: number, secure: boolean): string {
  return `${sessionCookie}=${token}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}
