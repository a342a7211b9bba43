import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Database } from '@roster/db';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { admit } from './access.js';
import { describeError } from './errors.js';

/** Where Bull Board is mounted: the owner's board, which can retry, promote and clean jobs. */
export const bullBoardPath = '/admin/queues';

/**
 * What the board's page may load: its own scripts, styles, images, fonts and
 * API, nothing from elsewhere, and no framing. Its `<base href>` is its own
 * address, so `base-uri` is 'self' (the web page's shell has none).
 */
const bullBoardPolicy =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

/**
 * The board's page as this server sends it: without the stylesheet it asks
 * of fonts.googleapis.com (a self-hosted admin page asks no third party, and
 * works offline; its own styles fall back to the system's sans-serif), and
 * with its "Loading" placeholder drawn without inline styles, which the
 * policy above refuses.
 */
function localBoardPage(html: string): string {
  return html
    .replace(/<link[^>]+href="https?:\/\/[^"]*"[^>]*>\s*/g, '')
    .replace(/<div id="root">[\s\S]*?<\/div>\s*(?=<script)/, '<div id="root"><p>Loading…</p></div>\n');
}

/**
 * Bull Board, for owners only: a member, who would see other people's person
 * and conversation ids in the jobs, gets 403 like any change they might try.
 * Without a session or token, 401, whatever address the request seems to come
 * from. The board's own page cannot send the CSRF header, so its changes must
 * carry this server's Origin instead (and the session cookie is
 * SameSite=Strict). Its menu has a link back to the web page.
 */
export async function mountBullBoard(app: FastifyInstance, database: Database, queues: readonly Queue[], showStack: boolean): Promise<void> {
  const adapter = new FastifyAdapter();
  adapter.setBasePath(bullBoardPath);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue)),
    serverAdapter: adapter,
    // No docs link (another site) and no Redis details (its icon draws with an inline style the policy refuses; `roster doctor` reports Redis).
    options: { uiConfig: { boardTitle: 'Roster jobs', hideDocsLink: true, hideRedisDetails: true, miscLinks: [{ text: 'Back to Roster', url: '/agents' }] } },
  });
  await app.register(async (scope) => {
    scope.addHook('onRequest', async (request, reply) => {
      try {
        await admit(database, request, 'owner', 'origin');
      } catch (error) {
        const refused = describeError(error, showStack);
        return reply.status(refused.status).send(refused.body);
      }
      return undefined;
    });
    scope.addHook('onSend', async (_request, reply, payload) => {
      reply.header('content-security-policy', bullBoardPolicy).header('referrer-policy', 'no-referrer').header('x-content-type-options', 'nosniff');
      const type = String(reply.getHeader('content-type') ?? '');
      return type.startsWith('text/html') && typeof payload === 'string' ? localBoardPage(payload) : payload;
    });
    await scope.register(adapter.registerPlugin(), { prefix: bullBoardPath });
  });
}
