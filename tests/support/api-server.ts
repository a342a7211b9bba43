import { testInstallationKey } from '@roster/config/testing';
import { channelPlugins, channelVariables } from '@roster/channel-registry';
import { createLogger, parseConfig, type Config } from '@roster/config';
import type { Person } from '@roster/core';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createRuntime, type Runtime } from '@roster/runtime';
import { createChannelCredentialStore } from '@roster/channel-host';
import { createLoginLink, createServer } from '@roster/server';
import { removePersonJobs, type QueueSet } from '@roster/jobs';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

export const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A signed-in browser: the session cookie and the CSRF token login gave. */
export interface Browser {
  person: Person;
  cookie: string;
  csrfToken: string;
}

interface RequestOptions {
  as?: Browser | { token: string };
  body?: unknown;
  /** With a session: send its CSRF token (the default), none, or this value. */
  csrf?: boolean | string;
  headers?: Record<string, string>;
  remoteAddress?: string;
}

export interface ApiServer {
  app: FastifyInstance;
  test: TestDatabase;
  runtime: Runtime;
  config: Config;
  /** Sign a person in as the page does: a login link's token, posted to /api/login. */
  signIn(person: Person): Promise<Browser>;
  request(method: string, url: string, options?: RequestOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/**
 * The real server over the real runtime on a PGlite database of its own; the
 * environment as parsed from `env`. With `queues`, it shows them in Bull Board
 * and takes an erased person's jobs out of them, as `roster start` wires it.
 */
export async function startApiServer(env: Record<string, string> = {}, queues?: QueueSet): Promise<ApiServer> {
  const test = await openTestDatabase();
  const config = parseConfig({ LOG_LEVEL: 'silent', ...env }, channelVariables);
  const runtime = await createRuntime({ config, database: test.database, key: testInstallationKey });
  const app = await createServer({
    config,
    database: test.database,
    runtime,
    redisUrl,
    logger: createLogger(config),
    key: testInstallationKey,
    channels: { credentials: createChannelCredentialStore(test.database, testInstallationKey, channelPlugins) },
    ...(queues === undefined
      ? {}
      : {
          queues: Object.values(queues.queues),
          removePersonJobs: (personId: string) => removePersonJobs(queues, personId),
        }),
  });
  const server: ApiServer = {
    app,
    test,
    runtime,
    config,
    async signIn(person) {
      const { token } = await createLoginLink(test.database, person.id);
      const response = await app.inject({ method: 'POST', url: '/api/login', payload: { token } });
      if (response.statusCode !== 200) throw new Error(`login failed: ${response.statusCode} ${response.body}`);
      const cookie = String(response.headers['set-cookie']).split(';')[0]!;
      return { person, cookie, csrfToken: (response.json() as { csrfToken: string }).csrfToken };
    },
    request(method, url, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.as !== undefined && 'token' in options.as) headers.authorization = `Bearer ${options.as.token}`;
      if (options.as !== undefined && 'cookie' in options.as) {
        headers.cookie = options.as.cookie;
        const csrf = options.csrf ?? true;
        if (csrf !== false) headers['x-csrf-token'] = csrf === true ? options.as.csrfToken : csrf;
      }
      return app.inject({
        method: method as 'GET',
        url,
        headers,
        ...(options.body === undefined ? {} : { payload: options.body as object }),
        ...(options.remoteAddress === undefined ? {} : { remoteAddress: options.remoteAddress }),
      });
    },
    async close() {
      await app.close();
      await test.cleanup();
    },
  };
  return server;
}
