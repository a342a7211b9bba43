import { personExportSchema } from '@roster/api';
import { z } from 'zod';
import type { RouteContext } from '../context.js';
import { ApiError } from '../errors.js';

/** A person's own data, to take away: theirs for anyone signed in, anyone's for an owner. */
export function personExportRoutes({ routes, runtime }: RouteContext): void {
  const { directory } = runtime.core;

  routes.add({
    method: 'GET',
    url: '/api/me/export',
    summary:
      'Everything Roster holds about you, as JSON: every fact with its versions and provenance, your messages and the replies to them, your channel handles, learning events, the lessons that cite you, your sessions and tokens (ids and dates). Read in your own scopes: nothing about anyone else.',
    access: 'person',
    query: z.object({ person: z.string().min(1).max(80).optional().describe('Another person, by name: the owner only (403 for anyone else).') }),
    response: { status: 200, schema: personExportSchema },
    errors: [403, 404],
    async handle({ query, viewer, reply }) {
      const owner = viewer.person.role === 'owner';
      // A member naming anyone but themselves is refused alike whether that person exists or not, so names are not probed.
      const named = query.person === undefined ? viewer.person : await directory.personByName(query.person).catch((error: unknown) => (owner ? Promise.reject(error) : null));
      if (named === null || (named.id !== viewer.person.id && !owner)) {
        throw new ApiError(403, 'owner_required', `${viewer.person.name} is a ${viewer.person.role}: only an owner may export another person's data.`);
      }
      const person = named;
      void reply.header('cache-control', 'no-store');
      void reply.header('content-disposition', `attachment; filename="roster-export-${encodeURIComponent(person.name)}.json"`);
      return runtime.core.exportPerson(person);
    },
  });
}
