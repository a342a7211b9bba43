import { engineChoiceSchema, engineTestSchema, purgeResultSchema } from '@roster/api';
import { checkModelReference } from '@roster/engines';
import { RosterError } from '@roster/errors';
import { z } from 'zod';
import type { RouteContext } from '../context.js';
import { agentSchema, nameParam, showAgent } from '../schemas.js';

const agentParams = z.object({ name: nameParam });
const engineReference = z.string().trim().min(1).max(500);

/** A reference as a page names it. */
function engineLabel(reference: string): string {
  if (reference === 'offline') return 'Offline rule engine (not a language model)';
  const colon = reference.indexOf(':');
  const provider = reference.slice(0, colon);
  const rest = reference.slice(colon + 1);
  if (provider === 'openai') return `OpenAI ${rest}`;
  if (provider === 'anthropic') return `Anthropic ${rest}`;
  if (provider === 'openai-compatible') {
    const hash = rest.lastIndexOf('#');
    let host = rest.slice(0, hash);
    try {
      host = new URL(host).host;
    } catch {
      // Shown as written.
    }
    return `${rest.slice(hash + 1)} at ${host}`;
  }
  return reference;
}

/** The wallet's agents and the engines they may run on: the owner's, but members may list agents to talk to them. */
export function agentRoutes({ routes, runtime, config }: RouteContext): void {
  const { directory } = runtime.core;

  routes.add({
    method: 'GET',
    url: '/api/agents',
    summary: 'The agents (with all=true, archived ones too).',
    access: 'person',
    query: z.object({ all: z.enum(['true', 'false']).optional().describe('true: archived agents too') }),
    response: { status: 200, schema: z.object({ agents: z.array(agentSchema) }) },
    async handle({ query }) {
      return { agents: (await directory.listAgents({ includeArchived: query.all === 'true' })).map(showAgent) };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/agents',
    summary: 'Add an agent: a name, a job sentence, an engine (ROSTER_ENGINE by default).',
    access: 'owner',
    body: z.object({ name: z.string().min(1).max(80), job: z.string().min(1).max(500), engine: engineReference.optional() }),
    response: { status: 201, schema: agentSchema },
    errors: [409],
    async handle({ body }) {
      const engine = body.engine ?? config.ROSTER_ENGINE;
      // An engine that cannot be made (unknown form, missing key) is refused before the agent is stored.
      runtime.checkEngine(engine, body.name);
      try {
        return showAgent(await directory.addAgent({ name: body.name, job: body.job, engine }));
      } catch (error) {
        // Names are one whatever their case ("ZOË" is "Zoë"): say which agent holds it, as it is spelt.
        if (!RosterError.isInstance(error) || error.code !== 'agent_exists') throw error;
        const holder = (await directory.listAgents({ includeArchived: true })).find((agent) => agent.name.toLowerCase() === body.name.trim().toLowerCase());
        if (holder === undefined) throw error;
        throw new RosterError('agent_exists', `An agent named ${holder.name}${holder.status === 'archived' ? ' (archived)' : ''} already exists, and names are the same whatever their case: choose another name.`, { cause: error });
      }
    },
  });

  routes.add({
    method: 'PATCH',
    url: '/api/agents/:name',
    summary: 'Rename an agent, or change its job or engine; its memory stays with it.',
    access: 'owner',
    params: agentParams,
    body: z
      .object({ name: z.string().min(1).max(80).optional(), job: z.string().min(1).max(500).optional(), engine: engineReference.optional() })
      .refine((changes) => Object.values(changes).some((value) => value !== undefined), 'name, job or engine: say what changes'),
    response: { status: 200, schema: agentSchema },
    errors: [404, 409],
    async handle({ params, body }) {
      let agent = await directory.agentByName(params.name);
      if (body.engine !== undefined) runtime.checkEngine(body.engine, agent.name);
      if (body.name !== undefined && body.name !== agent.name) agent = await directory.renameAgent(agent.name, body.name);
      if (body.job !== undefined || body.engine !== undefined) {
        agent = await directory.updateAgent(agent.name, { ...(body.job === undefined ? {} : { job: body.job }), ...(body.engine === undefined ? {} : { engine: body.engine }) });
      }
      return showAgent(agent);
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/agents/:name/archive',
    summary: 'Archive an agent; its memory is kept.',
    access: 'owner',
    params: agentParams,
    response: { status: 200, schema: agentSchema },
    errors: [404],
    async handle({ params }) {
      return showAgent(await directory.archiveAgent(params.name));
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/agents/:name/restore',
    summary: 'Make an archived agent active again, with the memory it kept.',
    access: 'owner',
    params: agentParams,
    response: { status: 200, schema: agentSchema },
    errors: [404, 409],
    async handle({ params }) {
      return showAgent(await directory.restoreAgent(params.name));
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/agents/:name/purge',
    summary: 'Forget all of an archived agent’s memory for good (audited, tombstones kept); confirm with its exact name.',
    access: 'owner',
    params: agentParams,
    body: z.object({ confirm: z.string().describe('The agent’s exact name again.') }),
    response: { status: 200, schema: purgeResultSchema },
    errors: [404, 409],
    async handle({ params, body }) {
      return runtime.core.purgeAgent(params.name, body.confirm);
    },
  });

  routes.add({
    method: 'GET',
    url: '/api/engines',
    summary: 'The engines in use or configured, and whether each can run as configured.',
    access: 'owner',
    response: {
      status: 200,
      schema: z.object({ engines: z.array(engineChoiceSchema) }),
    },
    async handle() {
      const agents = await directory.listAgents({ includeArchived: true });
      const references = [...new Set(['offline', config.ROSTER_ENGINE, ...(config.ROSTER_JUDGE_ENGINE === undefined ? [] : [config.ROSTER_JUDGE_ENGINE]), ...agents.map((agent) => agent.engine)])];
      const engines = await Promise.all(
        references.map(async (reference) => {
          const check = await checkModelReference(reference, config).catch((error: unknown) => ({ status: 'fail' as const, detail: (error as Error).message }));
          const roles = [...(reference === config.ROSTER_ENGINE ? ['the default for new agents'] : []), ...(reference === config.ROSTER_JUDGE_ENGINE ? ['the judge'] : [])];
          return { reference, label: engineLabel(reference), configured: check.status === 'ok', detail: roles.length > 0 ? `${check.detail}; ${roles.join(', ')}` : check.detail };
        }),
      );
      return { engines };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/engines/test',
    summary: 'Try an engine: check its configuration, then ask it for one short answer.',
    access: 'owner',
    body: z.object({ engine: engineReference }),
    response: { status: 200, schema: engineTestSchema },
    async handle({ body }) {
      try {
        const check = await checkModelReference(body.engine, config);
        if (check.status !== 'ok') return { ok: false, detail: check.detail };
        // The engine is tried outside any agent: it speaks as Roster ("I'm Roster. …"), not as an agent named "check".
        const engine = runtime.checkEngine(body.engine, 'Roster');
        const answer = await engine.run({ system: 'You are being tested. Answer in one short sentence.', memory: '', history: [], message: 'Say hello.', tools: [], signal: AbortSignal.timeout(20_000) });
        const text = answer.text.trim().replace(/\s+/g, ' ');
        return { ok: true, detail: `answered: “${text.length > 120 ? `${text.slice(0, 117)}…` : text}”` };
      } catch (error) {
        return { ok: false, detail: (error as Error).message };
      }
    },
  });
}
