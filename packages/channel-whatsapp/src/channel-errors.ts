import { ChannelError } from '@roster/channels';

/** WhatsApp gives no wait with a rate-overlimit: the first wait, doubled while it lasts. */
export const rateLimitWaitMs = 2000;

/**
 * A failed call in Roster's terms. Baileys throws WhatsApp's error nodes as
 * Booms carrying the node's code (`data`): 429 rate-overlimit waits (WhatsApp
 * says not how long, so the wait doubles from 2 s); 401/403/404 (not
 * authorized, forbidden, item not found: a chat the account may not write to,
 * a number not on WhatsApp) cannot be reached; a closed connection may be
 * tried again.
 */
export function toChannelError(what: string, error: unknown, waitMs = rateLimitWaitMs): ChannelError {
  if (ChannelError.isChannelError(error)) return error;
  const boom = error as { isBoom?: boolean; message?: string; data?: unknown; output?: { statusCode?: number } };
  const code = typeof boom.data === 'number' ? boom.data : undefined;
  const status = boom.output?.statusCode;
  const text = boom.message ?? '';
  if (code === 429 || status === 429 || text === 'rate-overlimit') {
    return new ChannelError('rate-limited', `WhatsApp refused the ${what} as over its rate limit; waiting ${waitMs / 1000} s.`, { retryAfterMs: waitMs });
  }
  if (code === 401 || code === 403 || code === 404 || /^(not-authorized|forbidden|item-not-found|not-acceptable)$/.test(text)) {
    return new ChannelError('unreachable', `WhatsApp will not deliver to this chat (${what}): ${text === '' ? String(code) : text}.`);
  }
  if (status === 428 || status === 408 || status === 503 || status === 440 || text === 'Connection Closed') {
    return new ChannelError('failed', `WhatsApp's connection closed during the ${what}; it reconnects by itself.`, { retryable: true });
  }
  return new ChannelError('failed', `WhatsApp's ${what} failed${status === undefined ? '' : ` (${status})`}.`, { retryable: false });
}
