import { STATUS_CODES } from 'node:http';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import fastifyStatic from '@fastify/static';
import { isLoopbackAddress, type Config, type InstallationKey, type Logger } from '@roster/config';
import { probeWrites, type Database } from '@roster/db';
import { RosterError } from '@roster/errors';
import { redisStatus } from '@roster/redis';
import type { Runtime } from '@roster/runtime';
import { pagePaths, pageShell, publicDirectory } from '@roster/web';
import type { Queue } from 'bullmq';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { admit, allowedHostNames, hostName } from './access.js';
import { ApiRoutes } from './api.js';
import { mountBullBoard } from './bull-board.js';
import type { RouteContext, ServerChannels } from './context.js';
import { ApiError, describeError } from './errors.js';
import { agentRoutes } from './routes/agents.js';
import { authRoutes } from './routes/auth.js';
import { channelRoutes } from './routes/channels.js';
import { chatRoutes } from './routes/chat.js';
import type { Metrics } from './metrics.js';
import { learningRoutes } from './routes/learning.js';
import { memoryRoutes } from './routes/memory.js';
import { peopleRoutes } from './routes/people.js';
import { personEraseRoutes } from './routes/person-erase.js';
import { personExportRoutes } from './routes/person-export.js';
import { channelLinkRoutes } from './routes/channel-links.js';
import { channelStates, describeAccounts, type ChannelWebhooks } from '@roster/gateway';

export type { ServerChannels } from './context.js';
export { bullBoardPath } from './bull-board.js';
export {
  apiTokenPrefix,
  createApiToken,
  createLoginLink,
  csrfTokenFor,
  loginLinkLifetimeMs,
  loginLinkUrl,
  sessionCookie,
  sessionLifetimeMs,
} from './credentials.js';
export { describeError, internalMessage, statusOf, type ErrorBody } from './errors.js';
export { createMetrics, engineLabel, serveMetrics, type Metrics, type MetricSources } from './metrics.js';

export interface ServerOptions {
  config: Config;
  database: Database;
  /** Memory, engines and the core: what the API acts through, the same as the CLI's. */
  runtime: Runtime;
  redisUrl: string;
  logger: Logger;
  /** The installation key: it opens what is stored sealed (WhatsApp's pairing code, for the page). */
  key: InstallationKey;
  /** The job queues Bull Board shows at /admin/queues. */
  queues?: readonly Queue[];
  /** Stored channel credentials, and the gateway of this process: its webhooks are served on this port. */
  channels?: ServerChannels;
  /** This process's metrics: served at GET /metrics to an owner (a session or an API token). */
  metrics?: Metrics;
  /**
   * Takes out of Redis the queued jobs that name an erased person (ids only,
   * never words), and says how many went, by queue; without it an erasure
   * leaves them, and they find nothing of the person when they run.
   */
  removePersonJobs?: (personId: string) => Promise<Record<string, number>>;
}

/** What `/healthz` answers. */
export interface Health {
  ok: boolean;
  database: 'embedded' | 'server';
  postgres: string | null;
  pgvector: string | null;
  /** `ok` when a write went through, else why not. */
  writes: string;
  redis: string;
  /**
   * Each configured bot account: `receiving` (by which process, since when),
   * `standby` (this process's gateway waits; another receives it), or
   * `failing` and why. One failing account (nobody receives the bot) makes
   * `ok` false and the answer 503, as a failing database does.
   */
  channels: Array<{ channel: string; account: string; state: 'receiving' | 'standby' | 'failing'; holder: string | null; since: string | null; detail: string }>;
}

/** Request bodies are read as UTF-8, strictly. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The largest request body, in bytes: a message is at most 4,000 characters. */
const bodyLimit = 64 * 1024;

/**
 * Each request logged once, when answered, at debug (at info, a page's first
 * minutes were hundreds of lines, the sign-in link among them); a request
 * that failed stays an error.
 */
class RequestsAtDebug extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error !== null && error !== undefined) {
      super.requestCompleted(error, request, reply);
      return;
    }
    request.log.debug({ method: request.method, url: request.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  }
}

/**
 * The HTTP server: health, the web page, the API (documented at
 * /api/openapi.json) with its chat stream, and Bull Board. Every request
 * names a host of the allow-list; every route but health, login and the
 * page needs a session or an API token. Errors answer
 * `{ error: { code, message } }`; the stack only when NODE_ENV=development
 * is set (unset, no stack leaves the process).
 */
export async function createServer(options: ServerOptions): Promise<FastifyInstance> {
  const { database, config, runtime } = options;
  const showStack = config.NODE_ENV === 'development';
  const logger = options.logger.child({ component: 'server' });
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    logController: new RequestsAtDebug(),
    // Only the proxies TRUST_PROXY names; a number trusts that many hops nearest to the server.
    trustProxy: typeof config.TRUST_PROXY === 'number' ? trustHops(config.TRUST_PROXY) : config.TRUST_PROXY,
    bodyLimit,
    // A request Fastify refuses before routing (a malformed URL, a bad header) answers in the same shape.
    frameworkErrors: (error, _request, reply) => {
      const { status, body } = describeError(error, showStack);
      void (reply as unknown as FastifyReply).status(status).send(body);
    },
    // A request Node's HTTP parser refuses (bytes that are not HTTP, headers past its limit) answers in the same shape too.
    clientErrorHandler: answerClientError,
  }) as unknown as FastifyInstance;
  app.decorateRequest('viewer', null);

  // An empty JSON body is no body (a POST that sends only a CSRF header); anything else must parse,
  // as UTF-8 (bytes that are not are refused, not stored as U+FFFD).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, bytes, done) => {
    let text: string;
    try {
      text = utf8.decode(bytes as Buffer);
    } catch {
      return done(new ApiError(400, 'invalid_json', 'The body is not valid UTF-8.'), undefined);
    }
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text) as unknown);
    } catch {
      done(new ApiError(400, 'invalid_json', 'The body is not valid JSON.'), undefined);
    }
  });

  app.setErrorHandler((error, request, reply) => {
    const { status, body } = describeError(error, showStack);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    return reply.status(status).send(body);
  });

  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({ error: { code: 'not_found', message: `No route for ${request.method} ${request.url.split('?')[0]}.` } }),
  );

  const hosts = allowedHostNames(config);
  app.addHook('onRequest', async (request, reply) => {
    try {
      // Health probes may name the server by any address; nothing else may (DNS rebinding).
      if (request.url !== '/healthz' && !hosts.has(hostName(request.host))) {
        throw new ApiError(421, 'host_not_allowed', `This server does not answer to ${JSON.stringify(hostName(request.host))}; add it to ROSTER_ALLOWED_HOSTS if it should.`);
      }
      const access = request.routeOptions.config.access;
      if (access !== undefined) await admit(database, request, access);
    } catch (error) {
      const { status, body } = describeError(error, showStack);
      if (status >= 500) request.log.error({ err: error }, 'request failed');
      return reply.status(status).send(body);
    }
    return undefined;
  });

  app.get('/healthz', async (_request, reply) => {
    const health = await checkHealth(database, options.redisUrl, { config, ...(options.channels === undefined ? {} : { channels: options.channels }) });
    return reply.status(health.ok ? 200 : 503).send(health);
  });

  await servePage(app);

  const routes = new ApiRoutes(app);
  const context: RouteContext = { config, database, runtime, logger, routes, key: options.key, channels: options.channels, removePersonJobs: options.removePersonJobs };
  authRoutes(context);
  agentRoutes(context);
  chatRoutes(context);
  memoryRoutes(context);
  learningRoutes(context);
  peopleRoutes(context);
  personExportRoutes(context);
  personEraseRoutes(context);
  channelRoutes(context);
  channelLinkRoutes(context);
  if (options.channels?.webhooks !== undefined) await mountWebhooks(app, options.channels.webhooks);
  if (options.metrics !== undefined) {
    const metrics = options.metrics;
    app.get('/metrics', { config: { access: 'owner' } }, async (_request, reply) => reply.header('content-type', metrics.contentType).send(await metrics.render()));
  }
  app.get('/api/openapi.json', { config: { access: 'person' } }, async () => routes.document({ title: 'Roster', version: '0.1.0' }));

  if (options.queues !== undefined && options.queues.length > 0) await mountBullBoard(app, database, options.queues, showStack);
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
        // Without cacheControl: false, the static plugin's settings for the hashed assets (a year, immutable) replace the no-cache above.
        .sendFile(pageShell, publicDirectory, { cacheControl: false }),
    );
  }
}

/**
 * The platforms' webhooks on the server's port: Slack's events and
 * Telegram's updates go, unread, to the gateway of this process, whose
 * channels check them (Slack's signature, Telegram's secret header). They
 * need no session; the Host check above still applies.
 */
async function mountWebhooks(app: FastifyInstance, webhooks: ChannelWebhooks): Promise<void> {
  for (const path of webhooks.paths) {
    app.post(path, {
      // Handed over before Fastify reads the body: the channel verifies the exact bytes it was signed over.
      onRequest: (request, reply, done) => {
        reply.hijack();
        webhooks.handle(request.raw, reply.raw);
        done();
      },
      handler: async () => undefined,
    });
  }
}

/** Write the error shape to a connection whose request could not be parsed, then close it. */
function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message]: [number, string, string] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'headers_too_large', 'The request’s headers are too large.']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', 'The request took too long to arrive.']
        : [400, 'invalid_http', 'The request is not valid HTTP.'];
  const body = JSON.stringify({ error: { code, message } });
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(error);
}

function trustHops(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}

/** The state of the database and Redis, as `/healthz` and `doctor` report it. */
export async function checkHealth(database: Database, redisUrl: string, served?: { config: Config; channels?: ServerChannels }): Promise<Health> {
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
  const writes = await probeWrites(database);
  const redis = await redisStatus(redisUrl);
  const channels = served === undefined ? [] : await channelHealth(database, served.config, served.channels);
  const channelsOk = channels.every((account) => account.state !== 'failing');
  return { ok: databaseOk && writes === 'ok' && redis === 'ok' && channelsOk, database: database.kind, postgres, pgvector, writes, redis, channels };
}

/** Who receives each configured bot account, as `/healthz` says it; leases that cannot be read fail every account that needs one. */
async function channelHealth(database: Database, config: Config, channels: ServerChannels | undefined): Promise<Health['channels']> {
  try {
    const credentials = (await channels?.credentials.open()) ?? {};
    const accounts = await describeAccounts(database, channelStates(config, { credentials, bindings: [] }), channels?.holder === undefined ? {} : { self: channels.holder });
    return accounts.map(({ channel, account, state, holder, since, detail }) => ({ channel, account, state, holder, since, detail }));
  } catch (error) {
    return [{ channel: '*', account: '*', state: 'failing', holder: null, since: null, detail: `who receives the bot accounts could not be read: ${(error as Error).message}` }];
  }
}

/**
 * Why binding to HOST deserves a warning, or null: beyond loopback the
 * server speaks plain HTTP to the network, so a proxy with TLS should stand
 * in front (and TRUST_PROXY name it).
 */
export function exposureWarning(config: Pick<Config, 'HOST' | 'TRUST_PROXY'>): string | null {
  if (isLoopbackAddress(config.HOST)) return null;
  if (config.TRUST_PROXY !== false) return null;
  return `Warning: HOST=${config.HOST} listens beyond this machine over plain HTTP, so sign-in cookies and tokens can be read on the way. Put a proxy with TLS in front and set TRUST_PROXY to its address, or keep HOST=127.0.0.1.`;
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
