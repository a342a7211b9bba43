import { z } from 'zod';
import { sessionCookieHeader } from '../access.js';
import type { RouteContext } from '../context.js';
import { ApiError } from '../errors.js';

const erasureSchema = z.object({
  personId: z.uuid().describe('The row kept, without a name, for the audit chains.'),
  facts: z.number().int().describe('Facts forgotten, each with a keyed tombstone.'),
  erased: z.record(z.string(), z.number().int()).describe('Rows that lost the person’s words or ties, by place.'),
  agents: z.number().int().describe('Agents whose audit chain recorded the erasure.'),
  jobsRemoved: z
    .number()
    .int()
    .nullable()
    .describe('Queued jobs that named the person (ids only, never words) taken out of Redis; null when this process could not reach Redis (those jobs then find nothing of the person when they run).'),
});

/** A person's erasure: anyone signed in erases themselves; an owner anyone. */
export function personEraseRoutes({ routes, runtime, logger, removePersonJobs }: RouteContext): void {
  const { directory } = runtime.core;

  routes.add({
    method: 'POST',
    url: '/api/me/erase',
    summary:
      'Erase everything Roster holds about you, with every agent and on every channel, for good: facts (keyed tombstones), your messages and the replies to them, your channel handles, learning, lessons drawn from your words, link codes, sessions and tokens. Confirm by typing your name. The last owner is refused.',
    access: 'person',
    body: z.object({
      confirm: z.string().max(80).describe('The name of the person erased, typed again.'),
      person: z.string().min(1).max(80).optional().describe('Another person, by name: the owner only (403 for anyone else).'),
    }),
    response: { status: 200, schema: erasureSchema },
    errors: [400, 403, 404, 409],
    async handle({ body, viewer, request, reply }) {
      const owner = viewer.person.role === 'owner';
      // As for the export: a member naming anyone but themselves is refused alike whether that person exists or not.
      const named = body.person === undefined ? viewer.person : await directory.personByName(body.person).catch((error: unknown) => (owner ? Promise.reject(error) : null));
      if (named === null || (named.id !== viewer.person.id && !owner)) {
        throw new ApiError(403, 'owner_required', `${viewer.person.name} is a ${viewer.person.role}: only an owner may erase another person's data.`);
      }
      const self = named.id === viewer.person.id;
      const erasure = await runtime.core.erasePerson(named, body.confirm, self ? { kind: 'person', id: named.id } : { kind: 'owner', id: viewer.person.id });
      // The erasure stands if Redis is away: the jobs carry ids only.
      const jobsRemoved =
        removePersonJobs === undefined
          ? null
          : await removePersonJobs(erasure.personId).then(
              (removed) => Object.values(removed).reduce((sum, count) => sum + count, 0),
              (error: unknown) => {
                logger.warn({ err: error }, 'an erased person’s queued jobs could not be removed from Redis');
                return null;
              },
            );
      void reply.header('cache-control', 'no-store');
      // Their sessions are gone with the rest: the cookie goes too.
      if (self) void reply.header('set-cookie', sessionCookieHeader('', 0, request.protocol === 'https'));
      return { ...erasure, jobsRemoved };
    },
  });
}
