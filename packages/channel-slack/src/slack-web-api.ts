/**
 * Slack's Web API and HTTP receiver in Roster's terms: its failures as
 * channel errors, Bolt's logger through Roster's, the token check `roster
 * doctor` runs, and the guard in front of Bolt's request listener.
 */
import type { RequestListener } from 'node:http';
import { ChannelError } from '@roster/channels';
import type { ChannelLogger as RosterLogger } from '@roster/contracts';
import { defaultBodyLimit, HTTPModuleFunctions, LogLevel, webApi, type Logger as BoltLogger } from '@slack/bolt';

/** How far a request's timestamp may be from now, either way, as Slack asks receivers to check. */
const requestMaxSkewSeconds = 5 * 60;

/** Errors that mean the person (or the conversation) cannot be reached. */
const unreachableErrors = new Set([
  'user_disabled',
  'user_not_found',
  'channel_not_found',
  'is_archived',
  'not_in_channel',
  'cannot_dm_bot',
  'messages_tab_disabled',
  'user_not_in_channel',
]);

/**
 * A Web API failure in Roster's terms: a 429 waits as Slack asked; a person
 * deactivated or a conversation gone cannot be reached; anything else is a
 * plain failure. The message never repeats what was sent.
 */
export function toChannelError(what: string, error: unknown): ChannelError {
  const failure = error as { code?: string; retryAfter?: number; data?: { error?: string } };
  if (failure.code === 'slack_webapi_rate_limited_error') {
    const seconds = failure.retryAfter ?? 1;
    return new ChannelError('rate-limited', `Slack asked to wait ${seconds} s before the next ${what}.`, { retryAfterMs: seconds * 1000 });
  }
  if (failure.code === 'slack_webapi_platform_error') {
    const reason = failure.data?.error ?? 'unknown_error';
    if (unreachableErrors.has(reason)) return new ChannelError('unreachable', `Slack cannot deliver to this conversation (${what}): ${reason}.`);
    if (reason === 'invalid_auth' || reason === 'not_authed' || reason === 'token_revoked' || reason === 'account_inactive') {
      return new ChannelError('failed', `Slack refused the bot token (${what}: ${reason}): check SLACK_BOT_TOKEN.`);
    }
    return new ChannelError('failed', `Slack's ${what} failed: ${reason}.`);
  }
  if (failure.code === 'slack_webapi_request_error' || failure.code === 'slack_webapi_http_error') {
    return new ChannelError('failed', `Slack's ${what} could not be reached (${failure.code}); check SLACK_API_URL and the network.`, { retryable: true });
  }
  return new ChannelError('failed', `Slack's ${what} failed.`);
}

/** Bolt's logger, speaking through Roster's (pino, with its redaction); quiet below warnings. */
export function boltLogger(log: RosterLogger | undefined): BoltLogger {
  let level: LogLevel = LogLevel.WARN;
  const line = (words: unknown[]) => words.map((word) => (typeof word === 'string' ? word : word instanceof Error ? word.message : '')).join(' ').replace(/xox[a-z]-[A-Za-z0-9-]+/g, '[redacted]');
  return {
    debug: (...words: unknown[]) => log?.debug(line(words)),
    info: (...words: unknown[]) => log?.debug(line(words)),
    warn: (...words: unknown[]) => log?.warn(line(words)),
    error: (...words: unknown[]) => log?.error(line(words)),
    setLevel: (next: LogLevel) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}

/**
 * Whether Slack takes this bot token: `auth.test` against the Web API root,
 * within `timeoutMs` (default 5 s), and that it is a bot's. Says why not.
 */
export async function checkSlackToken(options: { botToken: string; apiUrl?: string; timeoutMs?: number }): Promise<{ ok: boolean; detail: string }> {
  const client = new webApi.WebClient(options.botToken, {
    ...(options.apiUrl === undefined ? {} : { slackApiUrl: options.apiUrl.endsWith('/') ? options.apiUrl : `${options.apiUrl}/` }),
    timeout: options.timeoutMs ?? 5000,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logger: boltLogger(undefined),
  });
  try {
    const auth = await client.auth.test();
    if (auth.bot_id === undefined) return { ok: false, detail: 'the token is not a bot token: SLACK_BOT_TOKEN must start with xoxb-' };
    return { ok: true, detail: `token accepted: ${auth.user ?? auth.user_id} in ${auth.team ?? auth.team_id}` };
  } catch (error) {
    return { ok: false, detail: toChannelError('auth.test', error).message };
  }
}

/**
 * Bolt's receiver reads fields of whatever a request's body parses to: a
 * body of JSON `null` (or `payload=null`) throws out of its handler, past
 * every error handler, and leaves the request unanswered. The body is read
 * here first (Bolt takes a request whose body was read as it is), and one
 * that parses to no object is refused with 400; anything else goes on to
 * Bolt, which checks the signature and answers as before.
 */
export function refuseBodiesNotObjects(listener: RequestListener): RequestListener {
  return (request, response) => {
    HTTPModuleFunctions.bufferIncomingMessage(request, defaultBodyLimit).then(
      (buffered) => {
        let body: unknown = {};
        try {
          body = HTTPModuleFunctions.parseHTTPRequestBody(buffered);
        } catch {
          // Bolt answers a body it cannot parse itself.
        }
        if (typeof body !== 'object' || body === null) return HTTPModuleFunctions.buildNoBodyResponse(response, 400);
        // Bolt refuses a request dated more than five minutes ago; one dated as far ahead is as much a replay.
        const dated = Number(request.headers['x-slack-request-timestamp']);
        if (Number.isFinite(dated) && dated > Date.now() / 1000 + requestMaxSkewSeconds) return HTTPModuleFunctions.buildNoBodyResponse(response, 401);
        return listener(buffered, response);
      },
      (error: unknown) => HTTPModuleFunctions.buildNoBodyResponse(response, (error as { statusCode?: unknown }).statusCode === 413 ? 413 : 400),
    );
  };
}
