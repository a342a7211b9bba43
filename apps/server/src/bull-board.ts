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
/** The board a member sees: the same queues, read-only. */
export const readOnlyBullBoardPath = '/admin/queues-read-only';

/**
 * Bull Board, twice over the same queues: the owner's (every action) and a
 * read-only one for members, whose requests to the owner's board are sent
 * there (a page) or refused (an action). Without a session or token, 401,
 * whatever address the request seems to come from. The board's own page
 * cannot send the CSRF header, so its changes must carry this server's
 * Origin instead (and the session cookie is SameSite=Strict).
 */
export async function mountBullBoards(app: FastifyInstance, database: Database, queues: readonly Queue[], showStack: boolean): Promise<void> {
  const boards = [
    { path: bullBoardPath, readOnly: false },
    { path: readOnlyBullBoardPath, readOnly: true },
  ];
  for (const { path, readOnly } of boards) {
    const adapter = new FastifyAdapter();
    adapter.setBasePath(path);
    createBullBoard({
      queues: queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: readOnly })),
      serverAdapter: adapter,
      options: { uiConfig: { boardTitle: readOnly ? 'Roster jobs (read-only)' : 'Roster jobs' } },
    });
    await app.register(async (scope) => {
      scope.addHook('onRequest', async (request, reply) => {
        try {
          await admit(database, request, readOnly ? 'person' : 'owner', 'origin');
        } catch (error) {
          const refused = describeError(error, showStack);
          // A member opening the owner's board gets the read-only one.
          if (!readOnly && refused.body.error.code === 'owner_required' && (request.method === 'GET' || request.method === 'HEAD')) {
            return reply.redirect(`${readOnlyBullBoardPath}${request.url.slice(bullBoardPath.length)}`, 303);
          }
          return reply.status(refused.status).send(refused.body);
        }
        return undefined;
      });
      await scope.register(adapter.registerPlugin(), { prefix: path });
    });
  }
}
