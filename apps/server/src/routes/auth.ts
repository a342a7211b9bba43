import { createdTokenSchema, meSchema, tokenInfoSchema } from '@roster/api';
import { z } from 'zod';
import { FailureLimiter, sessionCookieHeader } from '../access.js';
import { createApiToken, csrfTokenFor, endSession, listApiTokens, redeemLoginLink, revokeApiToken, sessionLifetimeMs } from '../credentials.js';
import type { RouteContext } from '../context.js';
import { okSchema, showPerson, uuidParam } from '../schemas.js';

const showToken = (token: { id: string; name: string; createdAt: Date; lastUsedAt: Date | null; expiresAt: Date | null }) => ({
  id: token.id,
  name: token.name,
  createdAt: token.createdAt.toISOString(),
  lastUsedAt: token.lastUsedAt?.toISOString() ?? null,
  expiresAt: token.expiresAt?.toISOString() ?? null,
});

/** Sign-in: a login link for a session, the session itself, and personal API tokens. */
export function authRoutes({ routes, database }: RouteContext): void {
  // Tokens are 256 random bits, so guessing is hopeless; still, a source of many failures waits.
  const failures = new FailureLimiter(10, 10 * 60 * 1000);

  routes.add({
    method: 'POST',
    url: '/api/login',
    summary: 'Trade a login link’s token (the part after # in /login#…) for a session cookie.',
    access: 'public',
    body: z.object({ token: z.string().min(1).max(200) }),
    response: { status: 200, schema: meSchema },
    errors: [401, 429],
    async handle({ body, request, reply }) {
      failures.check(request.ip);
      let redeemed;
      try {
        redeemed = await redeemLoginLink(database, body.token);
      } catch (error) {
        failures.fail(request.ip);
        throw error;
      }
      void reply.header('set-cookie', sessionCookieHeader(redeemed.sessionToken, Math.floor(sessionLifetimeMs / 1000), request.protocol === 'https'));
      void reply.header('cache-control', 'no-store');
      return { person: showPerson(redeemed.session.person), csrfToken: csrfTokenFor(redeemed.sessionToken) };
    },
  });

  routes.add({
    method: 'GET',
    url: '/api/me',
    summary: 'Who is signed in, and the session’s CSRF token.',
    access: 'person',
    response: { status: 200, schema: meSchema },
    async handle({ viewer, reply }) {
      void reply.header('cache-control', 'no-store');
      return { person: showPerson(viewer.person), csrfToken: viewer.csrfToken };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/logout',
    summary: 'End the session (a bearer token stays valid: revoke it with DELETE /api/tokens/{id}).',
    access: 'person',
    response: { status: 200, schema: okSchema },
    async handle({ viewer, request, reply }) {
      if (viewer.sessionId !== null) await endSession(database, viewer.sessionId);
      void reply.header('set-cookie', sessionCookieHeader('', 0, request.protocol === 'https'));
      return { ok: true };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/tokens',
    summary: 'Make a personal API token; the token is shown once and kept only as its hash.',
    access: 'person',
    body: z.object({ name: z.string().trim().min(1).max(80) }),
    response: { status: 201, schema: createdTokenSchema },
    async handle({ body, viewer }) {
      const made = await createApiToken(database, viewer.person.id, body.name);
      return { ...showToken(made), token: made.token };
    },
  });

  routes.add({
    method: 'GET',
    url: '/api/tokens',
    summary: 'Your API tokens (never the tokens themselves).',
    access: 'person',
    response: { status: 200, schema: z.object({ tokens: z.array(tokenInfoSchema) }) },
    async handle({ viewer }) {
      return { tokens: (await listApiTokens(database, viewer.person.id)).map(showToken) };
    },
  });

  routes.add({
    method: 'DELETE',
    url: '/api/tokens/:id',
    summary: 'Revoke one of your API tokens.',
    access: 'person',
    params: z.object({ id: uuidParam }),
    response: { status: 200, schema: okSchema },
    errors: [404],
    async handle({ params, viewer }) {
      await revokeApiToken(database, viewer.person.id, params.id);
      return { ok: true };
    },
  });
}
