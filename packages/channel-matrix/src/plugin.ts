import { defineChannelPlugin, optionalSecret, optionalUrl } from '@roster/contracts';
import { z } from 'zod';

/** What a Matrix adapter is made from: a change of any of it restarts the adapter. */
export interface MatrixSettings {
  /** The homeserver's client-server API base address. */
  homeserverUrl: string;
  accessToken: string;
  /** Who may invite the bot to a group room (user ids, `*:server`, `*`); direct chats are joined from anyone. */
  roomInviters: readonly string[];
}

/** An inviter pattern: a user id, `*:server` (everyone on that server), or `*` (anyone). */
const inviterPattern = /^(?:\*|\*:[^\s,]+|@[^:\s,]+:[^\s,]+)$/u;

/** The homeserver's base address is the root of the client-server API, not a path under it. */
const underMatrixPath = (value: string): boolean => /\/_matrix(?:\/|$)/u.test(new URL(value).pathname);

const homeserverSchema = optionalUrl(['https:', 'http:']).refine((value) => value === undefined || !underMatrixPath(value));

const invitersSchema = z
  .string()
  .optional()
  .transform((value) => [...new Set((value ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== ''))])
  .refine((entries) => entries.every((entry) => inviterPattern.test(entry)));

const notConfigured = 'not configured (set MATRIX_HOMESERVER_URL and MATRIX_ACCESS_TOKEN, or run roster channel add matrix --homeserver URL --token TOKEN)';

/**
 * Matrix: a bot account on a homeserver, reached through its client-server
 * API with an access token; the bot's user id is learned from the token
 * (`/account/whoami`), so it is not asked for. The homeserver may be stored
 * with the token: a token is only good on the server that issued it, so the
 * two are entered (and replaced) together with `roster channel add matrix`.
 */
export const channelPlugin = defineChannelPlugin<MatrixSettings>({
  name: 'matrix',
  label: 'Matrix',
  summary: 'a bot account on a Matrix homeserver: its address and an access token (unencrypted rooms only)',
  environment: {
    MATRIX_HOMESERVER_URL: {
      schema: homeserverSchema,
      example: 'https://matrix.example.org',
      description: 'The Matrix homeserver’s client-server API base address (without /_matrix); with MATRIX_ACCESS_TOKEN the gateway serves Matrix.',
    },
    MATRIX_ACCESS_TOKEN: {
      schema: optionalSecret(),
      example: 'syt_cm9zdGVy_…',
      description: 'The access token of the bot’s Matrix account (Element: Settings → Help & About → Access Token, or a login with the account’s password).',
      secret: true,
    },
    MATRIX_ROOM_INVITERS: {
      schema: invitersSchema,
      example: '@ada:example.org,*:example.org',
      description:
        'Whose invitations to group rooms the Matrix bot accepts: user ids, *:server for everyone on a server, or * for anyone (comma-separated). Direct chats are accepted from anyone. Unset: group invitations are declined.',
    },
  },
  credentials: {
    access_token: { label: 'the bot account’s access token', variable: 'MATRIX_ACCESS_TOKEN', option: 'token' },
    homeserver: { label: 'the homeserver’s address (https://matrix.example.org)', variable: 'MATRIX_HOMESERVER_URL', option: 'homeserver' },
  },
  setup({ environment, stored }) {
    const homeserverUrl = (environment.MATRIX_HOMESERVER_URL as string | undefined) ?? stored.homeserver;
    const accessToken = (environment.MATRIX_ACCESS_TOKEN as string | undefined) ?? stored.access_token;
    const roomInviters = (environment.MATRIX_ROOM_INVITERS as string[] | undefined) ?? [];
    if (homeserverUrl === undefined && accessToken === undefined) return { state: 'off', detail: notConfigured };
    if (homeserverUrl === undefined) {
      return { state: 'incomplete', detail: 'has an access token but no homeserver: set MATRIX_HOMESERVER_URL (https://matrix.example.org) or run roster channel add matrix --homeserver URL' };
    }
    if (!homeserverSchema.safeParse(homeserverUrl).success) {
      return { state: 'incomplete', detail: `the stored homeserver is not an http(s) base address: run roster channel add matrix --homeserver URL (https://matrix.example.org)` };
    }
    if (accessToken === undefined) {
      return { state: 'incomplete', detail: `has a homeserver (${homeserverUrl}) but no access token: set MATRIX_ACCESS_TOKEN or run roster channel add matrix --token TOKEN` };
    }
    return { state: 'configured', settings: { homeserverUrl, accessToken, roomInviters }, mode: `/sync long polling at ${homeserverUrl}` };
  },
  async create(settings, host) {
    const { createMatrixAdapter } = await import('./matrix-adapter.js');
    return createMatrixAdapter({ ...settings, logger: host.logger });
  },
  async check(settings, _host, { timeoutMs }) {
    const { checkMatrixAccount } = await import('./matrix-adapter.js');
    const check = await checkMatrixAccount({ homeserverUrl: settings.homeserverUrl, accessToken: settings.accessToken, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
    return { status: check.ok ? 'ok' : 'fail', detail: check.detail };
  },
});
