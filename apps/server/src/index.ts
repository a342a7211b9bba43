import { join } from 'node:path';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import fastifyStatic from '@fastify/static';
import { isLoopbackAddress, type Config, type Logger } from '@roster/config';
import type { Database } from '@roster/db';
import { RosterError } from '@roster/errors';
import { redisStatus } from '@roster/redis';
import { pagePaths, pageShell, publicDirectory } from '@roster/web';
import type { Queue } from 'bullmq';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';

export interface ServerOptions {
  config: Pick<Config, 'HOST' | 'PORT' | 'NODE_ENV'>;
  database: Database;
  redisUrl: string;
  logger: Logger;
  /** The job queues Bull Board shows at /admin/queues. */
  queues?: readonly Queue[];
}

/** Where Bull Board is mounted. */
export const bullBoardPath = '/admin/queues';

/** What `/healthz` answers. */
export interface Health {
  ok: boolean;
  database: 'embedded' | 'server';
  postgres: string | null;
  pgvector: string | null;
  redis: string;
}

/**
 * The HTTP server: health, the web page, and (with later work) the API, SSE
 * and Bull Board. Errors answer `{ error: { code, message } }`; the stack only
 * when NODE_ENV=development is set (unset, no stack leaves the process).
 */
export async function createServer(options: ServerOptions): Promise<FastifyInstance> {
  const { database, config } = options;
  const app = Fastify({
    loggerInstance: options.logger.child({ component: 'server' }) as FastifyBaseLogger,
    // A request Fastify refuses before routing (a malformed URL, a bad header) answers in the same shape.
    frameworkErrors: (error, _request, reply) => {
      void (reply as unknown as FastifyReply).status(error.statusCode ?? 400).send({ error: { code: 'invalid_request', message: error.message } });
    },
  }) as unknown as FastifyInstance;

  app.setErrorHandler((error, _request, reply) => {
    const known = RosterError.isInstance(error);
    const validation = (error as { validation?: unknown }).validation !== undefined;
    const status = known ? 400 : validation ? 400 : ((error as { statusCode?: number }).statusCode ?? 500);
    if (status >= 500) options.logger.error({ err: error }, 'request failed');
    return reply.status(status).send({
      error: {
        code: known ? error.code : validation ? 'invalid_request' : status >= 500 ? 'internal' : 'request_failed',
        message: status >= 500 && !known ? 'The server failed to answer; see its log.' : (error as Error).message,
        ...(config.NODE_ENV === 'development' ? { stack: (error as Error).stack } : {}),
      },
    });
  });

  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({ error: { code: 'not_found', message: `No route for ${request.method} ${request.url}.` } }),
  );

  app.get('/healthz', async (_request, reply) => {
    const health = await checkHealth(database, options.redisUrl);
    return reply.status(health.ok ? 200 : 503).send(health);
  });

  await servePage(app);

  if (options.queues !== undefined && options.queues.length > 0) {
    const board = new FastifyAdapter();
    board.setBasePath(bullBoardPath);
    createBullBoard({ queues: options.queues.map((queue) => new BullMQAdapter(queue)), serverAdapter: board });
    await app.register(async (scope) => {
      // Operators only: on loopback until the owner's login guards it.
      scope.addHook('onRequest', async (request, reply) => {
        if (!isLoopbackAddress(request.ip)) {
          return reply.status(403).send({ error: { code: 'forbidden', message: 'Bull Board answers only on loopback until the owner login is set up.' } });
        }
        return undefined;
      });
      await scope.register(board.registerPlugin(), { prefix: bullBoardPath });
    });
  }

  return app;
}

/**
 * What the page shell may load: its own scripts, styles and API, nothing from
 * elsewhere, and no framing (the page acts for its owner).
 */
const pagePolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/**
 * The web page: its hashed assets (cached for good: a new build has new
 * names) and, at each of its addresses, the shell (never cached, so a new
 * build is picked up at once).
 */
async function servePage(app: FastifyInstance): Promise<void> {
  await app.register(fastifyStatic, { root: join(publicDirectory, 'assets'), prefix: '/assets/', index: false, immutable: true, maxAge: '365d', suppressWarning: true });
  for (const path of pagePaths) {
    app.get(path, (_request, reply) =>
      reply
        .header('cache-control', 'no-cache')
        .header('content-security-policy', pagePolicy)
        .header('referrer-policy', 'no-referrer')
        .header('x-content-type-options', 'nosniff')
        .sendFile(pageShell, publicDirectory),
    );
  }
}

/** The state of the database and Redis, as `/healthz` and `doctor` report it. */
export async function checkHealth(database: Database, redisUrl: string): Promise<Health> {
  let postgres: string | null = null;
  let pgvector: string | null = null;
  let databaseOk = false;
  try {
    const info = await database.info();
    postgres = info.postgres;
    pgvector = info.pgvector;
    databaseOk = pgvector !== null;
  } catch {
    databaseOk = false;
  }
  const redis = await redisStatus(redisUrl);
  return { ok: databaseOk && redis === 'ok', database: database.kind, postgres, pgvector, redis };
}

/** Listen on HOST:PORT; a taken port is a clear error. */
export async function listen(app: FastifyInstance, config: Pick<Config, 'HOST' | 'PORT'>): Promise<string> {
  try {
    return await app.listen({ host: config.HOST, port: config.PORT });
  } catch (error) {
    throw new RosterError(
      'port_unavailable',
      `Cannot listen on ${config.HOST}:${config.PORT}: ${(error as Error).message}. Stop what uses it, or set PORT.`,
      { cause: error },
    );
  }
}
