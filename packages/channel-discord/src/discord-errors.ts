import { ChannelError } from '@roster/channels';
import { DiscordAPIError, HTTPError, RateLimitError } from 'discord.js';

/** Discord's error codes that mean the person (or the conversation) cannot be reached. */
const unreachableCodes = new Set([
  50007, // Cannot send messages to this user (blocked the bot, closed DMs, left every shared server)
  10003, // Unknown Channel
  10013, // Unknown User
  50278, // Cannot send messages to this user (no longer shares a server)
]);

/**
 * A Discord failure in Roster's terms: a 429 waits as Discord asked; a person
 * who blocked the bot or cannot be sent direct messages (50007), or a channel
 * or user that is gone, cannot be reached; a 5xx or a network failure may be
 * tried again. The message never repeats what was sent.
 */
export function toChannelError(what: string, error: unknown): ChannelError {
  if (ChannelError.isChannelError(error)) return error;
  if (error instanceof RateLimitError) {
    const waitMs = Math.max(0, Math.ceil(error.retryAfter));
    return new ChannelError('rate-limited', `Discord asked to wait ${(waitMs / 1000).toFixed(1)} s before ${what} again.`, { retryAfterMs: waitMs });
  }
  if (error instanceof DiscordAPIError) {
    const code = typeof error.code === 'number' ? error.code : Number(error.code);
    if (unreachableCodes.has(code)) return new ChannelError('unreachable', `Discord cannot deliver to this person or channel (${what}): ${code} ${error.message}.`);
    if (error.status === 401) return new ChannelError('failed', `Discord refused the bot token (${what}): check DISCORD_BOT_TOKEN.`);
    if (code === 50001 || code === 50013) {
      return new ChannelError('failed', `Discord refused ${what}: the bot lacks access or a permission in that channel (${code}); invite it with Send Messages and Read Message History.`);
    }
    if (code === 10062) return new ChannelError('failed', `Discord no longer knows that interaction (${what}): it was not answered within 3 seconds, or its 15 minutes are over.`);
    return new ChannelError('failed', `Discord's ${what} failed: ${error.status} ${code} ${error.message}.`, { retryable: error.status >= 500 });
  }
  if (error instanceof HTTPError) return new ChannelError('failed', `Discord's ${what} failed: ${error.status}.`, { retryable: error.status >= 500 });
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'TokenInvalid') return new ChannelError('failed', `Discord refused the bot token (${what}): check DISCORD_BOT_TOKEN.`);
  const name = error instanceof Error ? error.name : 'Error';
  return new ChannelError('failed', `Discord could not be reached for ${what} (${name}); check DISCORD_API_URL and the network.`, { retryable: true });
}

/** Why Discord closed the gateway for good, in words an operator can act on. */
export function closedFor(code: number): ChannelError {
  if (code === 4004) return new ChannelError('failed', 'Discord refused the bot token (the gateway): check DISCORD_BOT_TOKEN.');
  if (code === 4014) {
    return new ChannelError('failed', 'Discord refused the gateway intents: switch on the Message Content intent for the bot in the Developer Portal (Bot → Privileged Gateway Intents).');
  }
  if (code === 4010) return new ChannelError('failed', 'Discord refused the gateway shard (4010): another session holds it, or the shard count changed.');
  if (code === 4011) return new ChannelError('failed', 'Discord requires more gateway shards for this bot (4011): leave DISCORD_SHARDS unset to take Discord’s recommendation, or raise it.');
  return new ChannelError('failed', `Discord closed the gateway connection for good (${code}).`);
}

/** Interaction and webhook tokens ride in URLs: never logged. */
export function redact(text: string): string {
  return text.replace(/(webhooks\/\d+\/|interactions\/\d+\/)[^/\s?]+/g, '$1[redacted]');
}

export function safeError(error: unknown): { name: string; message: string } {
  if (ChannelError.isChannelError(error)) return { name: error.name, message: error.message };
  if (error instanceof Error) return { name: error.name, message: redact(error.message) };
  return { name: 'Error', message: redact(String(error)) };
}

