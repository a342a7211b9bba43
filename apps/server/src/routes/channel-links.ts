import { channelLinkSchema } from '@roster/api';
import { channelPlugins } from '@roster/channel-registry';
import { channelHost, channelStates } from '@roster/gateway';
import { z } from 'zod';
import type { RouteContext } from '../context.js';

/** The channels that link by a code a phone scans (a linked device) rather than by a token: from their plugins. */
const linking = channelPlugins.filter((plugin) => plugin.link !== undefined);

/** A channel's link, for the Channels screen: its state, and while it waits for a scan, the code to scan. */
export function channelLinkRoutes({ routes, database, config, key, logger }: RouteContext): void {
  routes.add({
    method: 'GET',
    url: '/api/channels/:channel/link',
    summary: 'A linked-device channel’s link (WhatsApp’s): linked, waiting for a scan (with the code to scan, as SVG), reconnecting, or logged out.',
    access: 'owner',
    params: z.object({
      channel: z.string().refine((name) => linking.some((plugin) => plugin.name === name), { message: `one of ${linking.map((plugin) => plugin.name).join(', ')}` }),
    }),
    response: { status: 200, schema: channelLinkSchema },
    async handle({ params }) {
      const plugin = linking.find((candidate) => candidate.name === params.channel)!;
      const host = channelHost({ logger: logger.child({ component: `server/${plugin.name}` }), database, key });
      const state = channelStates(config).find((entry) => entry.channel === plugin.name);
      const account = 'default';
      const link = await plugin.link!.state(host, { account });
      return {
        channel: plugin.name,
        account,
        configured: state?.configured ?? false,
        setup: state?.detail ?? '',
        status: link.status,
        who: link.who,
        codeSvg: link.codeSvg,
        updatedAt: link.updatedAt === null ? null : link.updatedAt.toISOString(),
        detail: link.detail,
      };
    },
  });
}
