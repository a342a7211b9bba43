import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Config } from '@roster/config';
import type { Person } from '@roster/core';
import type { Database, Transaction } from '@roster/db';
import { ApiError } from './errors.js';

/**
 * The credentials of the HTTP API. Each is 32 random bytes, shown once and
 * kept only as its SHA-256: a login link (15 minutes, single use) opens a
 * session (a cookie, 30 days); a personal API token (`rst_…`) is sent as a
 * bearer header until its person revokes it.
 */

/** How long a login link works. */
export const loginLinkLifetimeMs = 15 * 60 * 1000;
/** How long a session lasts after its login. */
export const sessionLifetimeMs = 30 * 24 * 60 * 60 * 1000;
/** The prefix of API tokens, so a leaked one is recognisable. */
export const apiTokenPrefix = 'rst_';
/** The name of the session cookie. */
export const sessionCookie = 'roster_session';

const tokenPattern = /^[A-Za-z0-9_-]{43}$/;

function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** What the database keeps of a token. */
function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * The CSRF token of a session: derived from the session's own secret, so it
 * needs no storage, changes with every session, and cannot be computed by a
 * page that cannot read the (HttpOnly) cookie.
 */
export function csrfTokenFor(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('roster csrf token').digest('base64url');
}

/** Whether a header carries the session's CSRF token, compared in constant time. */
export function csrfMatches(sessionToken: string, header: string | undefined): boolean {
  if (header === undefined) return false;
  const expected = Buffer.from(csrfTokenFor(sessionToken));
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * The address a login link opens: the server's own (a wildcard HOST is
 * reached on loopback), with the token in the fragment, so it never reaches
 * a server log or a Referer header.
 */
export function loginLinkUrl(config: Pick<Config, 'HOST' | 'PORT'>, token: string): string {
  const wildcard = config.HOST === '0.0.0.0' || config.HOST === '::';
  const host = wildcard ? '127.0.0.1' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  return `http://${host}:${config.PORT}/login#${token}`;
}

/** A new login link for a person: the token (shown once) and when it stops working. */
export async function createLoginLink(database: Database, personId: string): Promise<{ token: string; expiresAt: Date }> {
  const token = newToken();
  const expiresAt = new Date(Date.now() + loginLinkLifetimeMs);
  await database.adminScope('sign-in: create a login link', async (tx) => {
    await dropExpired(tx);
    await tx.query('insert into login_links (token_hash, person_id, expires_at) values ($1, $2, $3)', [hashToken(token), personId, expiresAt]);
  });
  return { token, expiresAt };
}

/** A session as the server knows it on each request. */
export interface Session {
  id: string;
  person: Person;
}

/**
 * Trade a login link's token for a session: the link is spent in the same
 * transaction, so it works once. An unknown, used or expired token is refused.
 */
export async function redeemLoginLink(database: Database, token: string): Promise<{ sessionToken: string; session: Session; expiresAt: Date }> {
  const refused = new ApiError(401, 'login_link_invalid', 'That login link is unknown, used or expired. Ask for a new one: roster login-link.');
  if (!tokenPattern.test(token)) throw refused;
  const sessionToken = newToken();
  const expiresAt = new Date(Date.now() + sessionLifetimeMs);
  const session = await database.adminScope('sign-in: redeem a login link', async (tx) => {
    const { rows } = await tx.query<{ person_id: string }>(
      `update login_links set used_at = now() where token_hash = $1 and used_at is null and expires_at > now() returning person_id`,
      [hashToken(token)],
    );
    const personId = rows[0]?.person_id;
    if (personId === undefined) return null;
    const made = await tx.query<{ id: string }>('insert into web_sessions (token_hash, person_id, expires_at) values ($1, $2, $3) returning id', [
      hashToken(sessionToken),
      personId,
      expiresAt,
    ]);
    const person = await tx.query<Person>('select id, name, role from people where id = $1', [personId]);
    return { id: made.rows[0]!.id, person: person.rows[0]! };
  });
  if (session === null) throw refused;
  return { sessionToken, session, expiresAt };
}

/** The live session a cookie names, or null. */
export async function findSession(database: Database, sessionToken: string): Promise<Session | null> {
  if (!tokenPattern.test(sessionToken)) return null;
  return database.adminScope('sign-in: find a session', async (tx) => {
    const { rows } = await tx.query<{ id: string; person_id: string; name: string; role: Person['role'] }>(
      `update web_sessions s set last_seen_at = now() from people p
       where s.token_hash = $1 and s.expires_at > now() and p.id = s.person_id
       returning s.id, p.id as person_id, p.name, p.role`,
      [hashToken(sessionToken)],
    );
    const row = rows[0];
    return row === undefined ? null : { id: row.id, person: { id: row.person_id, name: row.name, role: row.role } };
  });
}

/** Log out: the session's row goes. */
export async function endSession(database: Database, sessionId: string): Promise<void> {
  await database.adminScope('sign-in: end a session', (tx) => tx.query('delete from web_sessions where id = $1', [sessionId]));
}

/** A personal API token as its person sees it listed: never the token itself. */
export interface ApiTokenInfo {
  id: string;
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
}

interface TokenRow {
  id: string;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
}
const toTokenInfo = (row: TokenRow): ApiTokenInfo => ({ id: row.id, name: row.name, createdAt: row.created_at, lastUsedAt: row.last_used_at, expiresAt: row.expires_at });

/** A new API token for a person; the token is returned once and kept only as its hash. */
export async function createApiToken(database: Database, personId: string, name: string): Promise<ApiTokenInfo & { token: string }> {
  const token = `${apiTokenPrefix}${newToken()}`;
  const row = await database.adminScope('sign-in: create an API token', async (tx) => {
    const { rows } = await tx.query<TokenRow>(
      'insert into api_tokens (token_hash, person_id, name) values ($1, $2, $3) returning id, name, created_at, last_used_at, expires_at',
      [hashToken(token), personId, name],
    );
    return rows[0]!;
  });
  return { ...toTokenInfo(row), token };
}

export async function listApiTokens(database: Database, personId: string): Promise<ApiTokenInfo[]> {
  return database.adminScope('sign-in: list API tokens', async (tx) => {
    const { rows } = await tx.query<TokenRow>('select id, name, created_at, last_used_at, expires_at from api_tokens where person_id = $1 order by created_at, id', [personId]);
    return rows.map(toTokenInfo);
  });
}

/** Revoke one of a person's tokens; another person's token is not found. */
export async function revokeApiToken(database: Database, personId: string, tokenId: string): Promise<void> {
  const deleted = await database.adminScope('sign-in: revoke an API token', async (tx) => {
    const { rowCount } = await tx.query('delete from api_tokens where id::text = $1 and person_id = $2', [tokenId, personId]);
    return rowCount ?? 0;
  });
  if (deleted === 0) throw new ApiError(404, 'token_not_found', `You have no API token ${tokenId}.`);
}

/** The person a bearer token belongs to, or null when it is unknown, revoked or expired. */
export async function personForApiToken(database: Database, token: string): Promise<Person | null> {
  if (!token.startsWith(apiTokenPrefix) || !tokenPattern.test(token.slice(apiTokenPrefix.length))) return null;
  return database.adminScope('sign-in: check an API token', async (tx) => {
    const { rows } = await tx.query<Person>(
      `update api_tokens t set last_used_at = now() from people p
       where t.token_hash = $1 and (t.expires_at is null or t.expires_at > now()) and p.id = t.person_id
       returning p.id, p.name, p.role`,
      [hashToken(token)],
    );
    return rows[0] ?? null;
  });
}

/** Expired links and sessions open nothing: they are not kept. */
async function dropExpired(tx: Transaction): Promise<void> {
  await tx.query('delete from login_links where expires_at < now()');
  await tx.query('delete from web_sessions where expires_at < now()');
}
