// First: routes the SDK's global logger before the SDK's modules load (see sdk-logs.ts).
import './sdk-logs.js';
import { ChannelError } from '@roster/channels';
import { ConnectionError, HTTPError, MatrixError } from 'matrix-js-sdk';

/** Homeserver answers that mean the room or person cannot be reached: trying again will not help. */
const unreachableCodes = new Set(['M_FORBIDDEN', 'M_NOT_FOUND', 'M_UNKNOWN_ROOM', 'M_USER_DEACTIVATED']);

/**
 * A homeserver failure in Roster's terms. `M_LIMIT_EXCEEDED` (or any 429)
 * waits `retry_after_ms` (or the Retry-After header) as asked; a 403 (the bot
 * is no longer in the room: the person kicked or banned it, or left a room
 * the bot then left) and a missing room cannot be reached; a bad token says
 * which variable to fix; a 5xx or a lost connection may be tried again. The
 * message never carries what was sent or the token.
 */
export function toChannelError(what: string, error: unknown): ChannelError {
  if (ChannelError.isChannelError(error)) return error;
  if (error instanceof MatrixError || error instanceof HTTPError) {
    const status = error.httpStatus ?? 0;
    const code = error instanceof MatrixError ? (error.errcode ?? '') : '';
    if (error.isRateLimitError()) {
      let waitMs = 1000;
      try {
        waitMs = error.getRetryAfterMs() ?? 1000;
      } catch {
        // A Retry-After the SDK cannot read: wait the default second.
      }
      return new ChannelError('rate-limited', `The Matrix homeserver asked to wait ${Math.ceil(waitMs / 1000)} s before the next ${what}.`, { retryAfterMs: waitMs });
    }
    if (status === 401 || code === 'M_UNKNOWN_TOKEN' || code === 'M_MISSING_TOKEN') {
      return new ChannelError('failed', `The Matrix homeserver refused the access token (${what}): check MATRIX_ACCESS_TOKEN, or store a new one with roster channel add matrix --token TOKEN.`);
    }
    if (unreachableCodes.has(code) || status === 403) {
      return new ChannelError('unreachable', `The Matrix homeserver will not deliver to this room (${what}): ${code || status}.`);
    }
    return new ChannelError('failed', `The Matrix homeserver's ${what} failed: ${status}${code === '' ? '' : ` ${code}`}.`, { retryable: status >= 500 || status === 0 });
  }
  if (error instanceof ConnectionError || (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError' || error.name === 'TypeError'))) {
    return new ChannelError('failed', `The Matrix homeserver could not be reached for ${what} (${error.name}); check MATRIX_HOMESERVER_URL and the network.`, { retryable: true });
  }
  return new ChannelError('failed', `The Matrix homeserver's ${what} failed (${error instanceof Error ? error.name : 'Error'}).`, { retryable: true });
}

/** What of an error may be logged: its kind and message, never a request body or a token. */
export function safeError(error: unknown): { name: string; message: string } {
  if (ChannelError.isChannelError(error)) return { name: error.name, message: error.message };
  if (error instanceof MatrixError) return { name: 'MatrixError', message: `${error.httpStatus ?? '?'} ${error.errcode ?? ''}`.trim() };
  if (error instanceof Error) return { name: error.name, message: error.message.replace(/access_token=[^&\s]+/g, 'access_token=[redacted]') };
  return { name: 'Error', message: String(error) };
}
