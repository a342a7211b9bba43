import { factHistorySchema, forgetResultSchema, memoryListingSchema } from '@roster/api';
import { readMemoryView, type Agent } from '@roster/core';
import type { Scope } from '@roster/db';
import { FactNotFoundError, type Fact, type Provenance, type Tombstone } from '@roster/memory';
import { z } from 'zod';
import type { Viewer } from '../access.js';
import type { RouteContext } from '../context.js';
import { factSchema, nameParam, showFact, showSourceMessage, uuidParam } from '../schemas.js';

const factParams = z.object({ name: nameParam, id: uuidParam });
const contentBody = z.object({ content: z.string().min(1).describe('At most 4,000 characters (longer: 413).') });
const time = z.iso.datetime({ offset: true });

/** Who made a change from the web: the owner's tool, or the person about their own memory. */
function provenanceOf(viewer: Viewer): Provenance {
  return { actor: { kind: viewer.person.role === 'owner' ? 'owner' : 'person', id: viewer.person.id }, channel: 'web' };
}

/**
 * What agents remember. An owner reads and changes every person's memory;
 * a member only their own: another person's fact, or an agent-wide one, is
 * not found (404), never merely forbidden, so its existence is not told.
 */
export function memoryRoutes({ routes, runtime }: RouteContext): void {
  const { directory } = runtime.core;
  const { memory } = runtime;

  /** The scope a fact lives in, as the viewer may reach it; anything else is not found. */
  async function scopeFor(viewer: Viewer, agent: Agent, factId: string): Promise<Scope> {
    const scope = await memory.scopeOf(agent.id, factId);
    if (viewer.person.role !== 'owner' && scope.personId !== viewer.person.id) throw new FactNotFoundError(factId);
    return scope;
  }

  routes.add({
    method: 'GET',
    url: '/api/agents/:name/memory',
    summary: 'What an agent remembers, by person (person null: agent-wide), each fact with the messages it came from. A member sees only their own group.',
    access: 'person',
    params: z.object({ name: nameParam }),
    query: z.object({
      person: z.string().min(1).max(80).optional().describe('Only this person (the owner only; ignored for a member).'),
      validAt: time.optional().describe('What was true at this time.'),
      recordedAt: time.optional().describe('What was believed at this time.'),
    }),
    response: {
      status: 200,
      schema: memoryListingSchema,
    },
    errors: [404],
    async handle({ params, query, viewer }) {
      const agent = await directory.agentByName(params.name);
      const owner = viewer.person.role === 'owner';
      const person = !owner ? viewer.person : query.person === undefined ? undefined : await directory.personByName(query.person);
      const view = await readMemoryView({ directory, memory }, agent, {
        ...(person === undefined ? {} : { person }),
        ...(query.validAt === undefined ? {} : { validAt: new Date(query.validAt) }),
        ...(query.recordedAt === undefined ? {} : { recordedAt: new Date(query.recordedAt) }),
      });
      const facts = [...view.agentWide, ...view.people.flatMap((group) => group.facts)];
      const sources = new Map(
        (await runtime.core.sourceMessages({ ids: facts.flatMap((fact) => fact.sourceMessageIds), personId: viewer.person.id })).map((message) => [message.id, showSourceMessage(message)] as const),
      );
      const show = (fact: Fact) => {
        const shown = showFact(fact);
        return { ...shown, provenance: { ...shown.provenance, sources: fact.sourceMessageIds.flatMap((id) => sources.get(id) ?? []) } };
      };
      const names = new Map((await directory.listPeople()).map((someone) => [someone.id, someone.name] as const));
      const buried = (tombstone: Tombstone) => ({
        id: tombstone.id,
        factId: tombstone.factId,
        forgottenAt: tombstone.forgottenAt.toISOString(),
        forgottenBy:
          tombstone.forgottenBy === null
            ? null
            : { kind: tombstone.forgottenBy.kind, id: tombstone.forgottenBy.id ?? null, name: tombstone.forgottenBy.id === undefined ? null : (names.get(tombstone.forgottenBy.id) ?? null) },
      });
      const people = view.people.map((group) => ({ person: { id: group.person.id, name: group.person.name }, facts: group.facts.map(show), tombstones: group.tombstones.map(buried) }));
      return { groups: person === undefined ? [{ person: null, facts: view.agentWide.map(show), tombstones: view.agentWideTombstones.map(buried) }, ...people] : people };
    },
  });

  routes.add({
    method: 'GET',
    url: '/api/agents/:name/facts/:id/history',
    summary: 'The versions of a fact, oldest first: what it replaced and what replaced it, each with the event that recorded it.',
    access: 'person',
    params: factParams,
    response: {
      status: 200,
      schema: factHistorySchema,
    },
    errors: [404],
    async handle({ params, viewer }) {
      const agent = await directory.agentByName(params.name);
      const history = await memory.history(await scopeFor(viewer, agent, params.id), params.id);
      return {
        versions: history.map((entry) => ({
          fact: showFact(entry.fact),
          relation: entry.relation,
          event: entry.event === null ? null : { ...entry.event, occurredAt: entry.event.occurredAt.toISOString() },
        })),
      };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/agents/:name/facts/:id/correct',
    summary: '“That was wrong”: the fact is retracted and the right content takes its valid time; the correction is a learning event for the agent and person, as one said in chat (harvest makes it a mirror case).',
    access: 'person',
    params: factParams,
    body: contentBody,
    response: { status: 200, schema: z.object({ fact: factSchema, retracted: factSchema }) },
    errors: [404, 409, 413],
    async handle({ params, body, viewer }) {
      const agent = await directory.agentByName(params.name);
      // Through the core, as a chat correction: a learning event, and after harvest a mirror case, for this agent and person.
      const { fact, retracted } = await runtime.core.correctFact(await scopeFor(viewer, agent, params.id), params.id, body.content, { ...provenanceOf(viewer), channel: 'web' });
      return { fact: showFact(fact), retracted: showFact(retracted) };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/agents/:name/facts/:id/update',
    summary: '“That changed”: the fact held until now, and the new content holds from now.',
    access: 'person',
    params: factParams,
    body: contentBody,
    response: { status: 200, schema: z.object({ fact: factSchema, previous: factSchema }) },
    errors: [404, 409, 413],
    async handle({ params, body, viewer }) {
      const agent = await directory.agentByName(params.name);
      const { fact, previous } = await memory.update(await scopeFor(viewer, agent, params.id), params.id, body.content, provenanceOf(viewer));
      return { fact: showFact(fact), previous: showFact(previous) };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/agents/:name/facts/:id/confirm',
    summary: 'Confirm a fact: it becomes verified.',
    access: 'person',
    params: factParams,
    response: { status: 200, schema: z.object({ fact: factSchema }) },
    errors: [404, 409],
    async handle({ params, viewer }) {
      const agent = await directory.agentByName(params.name);
      return { fact: showFact(await memory.confirm(await scopeFor(viewer, agent, params.id), params.id, provenanceOf(viewer))) };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/agents/:name/facts/:id/forget',
    summary: 'Forget a fact for good: its words are erased everywhere; a tombstone keeps it from coming back.',
    access: 'person',
    params: factParams,
    response: {
      status: 200,
      schema: forgetResultSchema,
    },
    errors: [404, 409],
    async handle({ params, viewer }) {
      const agent = await directory.agentByName(params.name);
      const scope = await scopeFor(viewer, agent, params.id);
      const result = await memory.forget(scope, params.id, provenanceOf(viewer));
      const tombstone = (await memory.tombstones(scope)).find((candidate) => candidate.id === result.tombstoneId);
      return {
        fact: showFact(result.fact),
        tombstone: {
          id: result.tombstoneId,
          factId: result.fact.id,
          forgottenAt: (tombstone?.forgottenAt ?? new Date()).toISOString(),
          forgottenBy: { kind: viewer.person.role === 'owner' ? 'owner' : 'person', id: viewer.person.id, name: viewer.person.name },
        },
        erased: Object.fromEntries(Object.entries(result.erased).map(([place, count]) => [place, Number(count)])),
      };
    },
  });
}
