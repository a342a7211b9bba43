import { auditEventSchema, auditVerifySchema, personWithIdentitiesSchema } from '@roster/api';
import { listAuditEvents } from '@roster/memory';
import { z } from 'zod';
import type { RouteContext } from '../context.js';
import { nameParam, personSchema, showPerson } from '../schemas.js';

/** The owner's directory (people, their channel handles, link codes) and the audit log. */
export function peopleRoutes({ routes, runtime, database }: RouteContext): void {
  const { directory } = runtime.core;

  routes.add({
    method: 'GET',
    url: '/api/people',
    summary: 'The people, with their roles and the channel handles tied to them.',
    access: 'owner',
    response: {
      status: 200,
      schema: z.object({
        people: z.array(personWithIdentitiesSchema),
      }),
    },
    async handle() {
      const [people, identities] = await Promise.all([directory.listPeople(), directory.listIdentities()]);
      return {
        people: people.map((person) => ({
          ...showPerson(person),
          identities: identities.filter((identity) => identity.personId === person.id).map(({ channel, externalId, displayName }) => ({ channel, externalId, displayName })),
        })),
      };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/people',
    summary: 'Add a person (a member unless a role is given).',
    access: 'owner',
    body: z.object({ name: z.string().min(1).max(80), role: z.enum(['owner', 'member', 'guest']).optional() }),
    response: { status: 201, schema: personSchema },
    errors: [409],
    async handle({ body }) {
      return showPerson(await directory.addPerson({ name: body.name, ...(body.role === undefined ? {} : { role: body.role }) }));
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/people/:name/link-code',
    summary: 'A single-use code (one hour) the person sends as /link CODE from a new channel.',
    access: 'owner',
    params: z.object({ name: nameParam }),
    response: { status: 201, schema: z.object({ code: z.string(), expiresAt: z.iso.datetime() }) },
    errors: [404, 409],
    async handle({ params }) {
      const person = await directory.personByName(params.name);
      const { code, expiresAt } = await directory.createLinkCode(person.id);
      return { code, expiresAt: expiresAt.toISOString() };
    },
  });

    routes.add({
    method: 'GET',
    url: '/api/audit',
    summary: 'The newest memory audit events (ids, states and counts; never content), newest first.',
    access: 'owner',
    query: z.object({ agent: nameParam.optional(), action: z.string().min(1).max(60).optional(), limit: z.coerce.number().int().min(1).max(1000).optional() }),
    response: { status: 200, schema: z.object({ events: z.array(auditEventSchema) }) },
    errors: [404],
    async handle({ query }) {
      const agentId = query.agent === undefined ? undefined : (await directory.agentByName(query.agent)).id;
      const agents = await directory.listAgents({ includeArchived: true });
      const events = await listAuditEvents(database, { ...(agentId === undefined ? {} : { agentId }), ...(query.action === undefined ? {} : { action: query.action }), limit: query.limit ?? 100 });
      return {
        events: events.map((entry) => ({
          id: entry.id,
          agent: agents.find((agent) => agent.id === entry.agentId)?.name ?? entry.agentId,
          seq: entry.seq,
          personId: entry.personId,
          actorKind: entry.actorKind,
          actorId: entry.actorId,
          action: entry.action,
          targetKind: entry.targetKind,
          targetId: entry.targetId,
          detail: entry.detail,
          occurredAt: new Date(entry.occurredAt).toISOString(),
          hash: entry.hash,
        })),
      };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/audit/verify',
    summary: 'Recompute the memory audit chains (of one agent, or all) and name the first broken link of each.',
    access: 'owner',
    body: z.object({ agent: nameParam.optional() }).optional(),
    response: {
      status: 200,
      schema: auditVerifySchema,
    },
    errors: [404],
    async handle({ body }) {
      const agentId = body?.agent === undefined ? undefined : (await directory.agentByName(body.agent)).id;
      const agents = await directory.listAgents({ includeArchived: true });
      const chains = (await runtime.memory.audit.verify(agentId === undefined ? {} : { agentId })).map(({ agentId: id, events, ok, broken }) => ({
        agent: agents.find((agent) => agent.id === id)?.name ?? id,
        agentId: id,
        events,
        ok,
        broken,
      }));
      return { ok: chains.every((chain) => chain.ok), chains };
    },
  });
}
