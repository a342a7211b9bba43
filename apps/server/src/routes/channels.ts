import { bindingSchema, channelSchema } from '@roster/api';
import { channelNames, channelPlugins } from '@roster/channel-registry';
import { channelStates, describeAccounts } from '@roster/gateway';
import { z } from 'zod';
import type { RouteContext } from '../context.js';
import { ApiError } from '../errors.js';
import { nameParam } from '../schemas.js';

/** A registered channel's name, as a path parameter. */
const registered = z.string().refine((name) => channelNames.includes(name), { message: `one of ${channelNames.join(', ')}` });
/** A registered channel that takes credentials. */
const takingCredentials = z
  .string()
  .refine((name) => channelPlugins.some((plugin) => plugin.name === name && Object.keys(plugin.credentials).length > 0), {
    message: `one of ${channelPlugins.filter((plugin) => Object.keys(plugin.credentials).length > 0).map((plugin) => plugin.name).join(', ')}`,
  });

/**
 * The channels: their state, their credentials (write only: which are set
 * and from where, never a value), and their bindings (agent and policy).
 */
export function channelRoutes({ routes, runtime, config, channels, database }: RouteContext): void {
  const { directory } = runtime.core;

  async function describeChannels(): Promise<Array<z.infer<typeof channelSchema>>> {
    const [stored, opened, bindings] = await Promise.all([
      channels?.credentials.list() ?? [],
      channels?.credentials.open() ?? {},
      directory.listBindings(),
    ]);
    const states = channelStates(config, { credentials: opened, bindings });
    const accounts = await describeAccounts(database, states, channels?.holder === undefined ? {} : { self: channels.holder });
    return states.map(({ plugin, channel, configured, detail }) => {
      const own = stored.find((entry) => entry.channel === channel && entry.account === 'default');
      return {
        channel,
        label: plugin.label,
        summary: plugin.summary,
        linkable: plugin.link !== undefined,
        configured,
        detail,
        accounts: accounts.filter((account) => account.channel === channel).map(({ account, state, holder, since, detail }) => ({ account, state, holder, since, detail })),
        credentials: Object.entries(plugin.credentials).map(([name, spec]) => {
          const fromEnvironment = config.channels[spec.variable] !== undefined;
          const isStored = own?.names.includes(name) ?? false;
          return {
            name,
            label: spec.label,
            variable: spec.variable,
            source: fromEnvironment ? 'environment' : isStored ? 'stored' : 'unset',
            updatedAt: isStored && !fromEnvironment ? own!.updatedAt.toISOString() : null,
          } as const;
        }),
        bindings: bindings.filter((binding) => binding.channel === channel).map(({ account, agent, policy, allowlist }) => ({ account, agent, policy, allowlist })),
      };
    });
  }

  function store() {
    if (channels === undefined) throw new ApiError(503, 'credentials_unavailable', 'This server keeps no channel credentials: start it with roster start.');
    return channels;
  }

  routes.add({
    method: 'GET',
    url: '/api/channels',
    summary: 'The channels: whether each is configured, where its credentials come from (never their values), and its bindings.',
    access: 'owner',
    response: { status: 200, schema: z.object({ channels: z.array(channelSchema) }) },
    async handle() {
      return { channels: await describeChannels() };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/channels/:channel/credentials',
    summary:
      'Store a channel’s bot token (and Slack’s signing secret or app token), sealed with the installation key. Write only: the answer and every later one say only that it is set. A running gateway picks it up within seconds.',
    access: 'owner',
    params: z.object({ channel: takingCredentials }),
    body: z.object({ values: z.record(z.string().min(1).max(40), z.string().max(1024)) }),
    response: { status: 200, schema: z.object({ channel: channelSchema }) },
    errors: [503],
    async handle({ params, body }) {
      const { credentials, changed } = store();
      await credentials.set(params.channel, body.values);
      await changed?.();
      return { channel: (await describeChannels()).find((entry) => entry.channel === params.channel)! };
    },
  });

  routes.add({
    method: 'DELETE',
    url: '/api/channels/:channel/credentials',
    summary: 'Remove a channel’s stored credentials (a variable in the environment stays in force).',
    access: 'owner',
    params: z.object({ channel: takingCredentials }),
    response: { status: 200, schema: z.object({ removed: z.number().int(), channel: channelSchema }) },
    errors: [503],
    async handle({ params }) {
      const { credentials, changed } = store();
      const removed = await credentials.clear(params.channel);
      await changed?.();
      return { removed, channel: (await describeChannels()).find((entry) => entry.channel === params.channel)! };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/channels/:channel/binding',
    summary: 'Bind the channel’s bot to one agent (or the whole wallet, with agent null) under an access policy.',
    access: 'owner',
    params: z.object({ channel: registered }),
    body: z.object({
      agent: nameParam.nullable().optional(),
      policy: z.enum(['pairing', 'allowlist', 'open']).optional(),
      allowlist: z.array(z.string().min(1).max(200)).max(500).optional(),
    }),
    response: { status: 200, schema: bindingSchema },
    errors: [404],
    async handle({ params, body }) {
      if ((body.allowlist?.length ?? 0) > 0 && body.policy !== 'allowlist') {
        throw new ApiError(400, 'invalid_request', 'body.allowlist: handles are listed for the allowlist policy only.');
      }
      const binding = await directory.bindChannel({
        channel: params.channel,
        agent: body.agent ?? null,
        ...(body.policy === undefined ? {} : { policy: body.policy }),
        ...(body.allowlist === undefined ? {} : { allowlist: body.allowlist }),
      });
      return { account: binding.account, agent: binding.agent, policy: binding.policy, allowlist: binding.allowlist };
    },
  });

  routes.add({
    method: 'DELETE',
    url: '/api/channels/:channel/binding',
    summary: 'Remove the channel’s binding: it answers linked people only, talking to the wallet.',
    access: 'owner',
    params: z.object({ channel: registered }),
    response: { status: 200, schema: z.object({ removed: z.boolean() }) },
    async handle({ params }) {
      return { removed: await directory.unbindChannel(params.channel) };
    },
  });
}
