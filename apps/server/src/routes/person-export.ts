import { z } from 'zod';
import type { RouteContext } from '../context.js';
import { ApiError } from '../errors.js';

const time = z.iso.datetime();
const trust = z.enum(['candidate', 'active', 'verified', 'disputed', 'retracted', 'rejected', 'faded', 'forgotten']);

const factVersionSchema = z.object({
  id: z.uuid(),
  content: z.string().nullable().describe('null once forgotten'),
  forgotten: z.boolean(),
  audience: z.enum(['private', 'agent']).describe('private: for the person alone; agent: something they told the agent for everyone it talks to.'),
  category: z.string(),
  trust,
  validFrom: time,
  validTo: time.nullable(),
  recordedAt: time,
  supersededAt: time.nullable(),
  supersededBy: z.uuid().nullable().describe('The version an update or a correction wrote after this one.'),
  restates: z.uuid().nullable(),
  restatedAs: z.uuid().nullable(),
  uses: z.number().int(),
  lastUsedAt: time.nullable(),
  provenance: z.object({
    actorKind: z.string(),
    actorId: z.string().nullable(),
    channel: z.string().nullable(),
    tool: z.string().nullable(),
    untrustedInput: z.boolean(),
    sourceMessageIds: z.array(z.string()),
  }),
});

/** The person export's layout; the CLI's `roster person export` writes the same. */
const personExportSchema = z.object({
  format: z.literal('roster-person-export'),
  formatVersion: z.number().int().describe('Raised when a field changes meaning or goes.'),
  exportedAt: time,
  person: z.object({ id: z.uuid(), name: z.string(), role: z.enum(['owner', 'member', 'guest']) }),
  facts: z.array(z.object({ agent: z.string(), agentId: z.uuid(), versions: z.array(factVersionSchema).describe('Every version of the fact, oldest first.') })),
  messages: z.array(
    z.object({
      id: z.uuid(),
      agent: z.string().nullable(),
      role: z.string(),
      channel: z.string().nullable(),
      conversationId: z.uuid(),
      content: z.string().nullable().describe('null once erased by a forget'),
      forgotten: z.boolean(),
      createdAt: time,
    }),
  ),
  identities: z.array(z.object({ id: z.uuid(), channel: z.string(), externalId: z.string(), displayName: z.string().nullable(), createdAt: time, unreachableAt: time.nullable() })),
  learningEvents: z.array(
    z.object({ id: z.uuid(), agent: z.string(), kind: z.string(), text: z.string(), channel: z.string().nullable(), messageId: z.string().nullable(), createdAt: time, harvestedAt: time.nullable() }),
  ),
  lessons: z.array(
    z.object({
      id: z.uuid(),
      agent: z.string(),
      text: z.string(),
      status: z.string(),
      version: z.number().int(),
      approvedAt: time,
      retiredAt: time.nullable(),
      evidence: z
        .array(
          z.union([
            z.object({ yours: z.literal(true), kind: z.string().nullable(), eventId: z.string().nullable(), messageId: z.string().nullable(), note: z.string().nullable() }),
            z.object({ yours: z.literal(false), kind: z.string().nullable() }),
          ]),
        )
        .describe('Each piece says whether it is yours; another person’s is only counted, with its kind.'),
    }),
  ),
  sessions: z.array(z.object({ id: z.uuid(), createdAt: time, expiresAt: time, lastSeenAt: time })),
  apiTokens: z.array(z.object({ id: z.uuid(), name: z.string(), createdAt: time, expiresAt: time.nullable(), lastUsedAt: time.nullable() })),
});

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
