import { ApplicationFlags, REST, Routes, type APIUser } from 'discord.js';
import { ChannelError } from '@roster/channels';
import { toChannelError } from './discord-errors.js';

/**
 * Whether Discord takes this bot token (`GET /users/@me` against the API
 * base) and the application has the Message Content intent switched on
 * (`GET /applications/@me`), each within `timeoutMs` (default 5 s). Says
 * why not in words an operator can act on.
 */
export async function checkDiscordToken(options: { token: string; apiUrl?: string; timeoutMs?: number }): Promise<{ ok: boolean; detail: string }> {
  const rest = new REST({
    ...(options.apiUrl === undefined ? {} : { api: options.apiUrl.replace(/\/+$/, '') }),
    timeout: options.timeoutMs ?? 5000,
    retries: 0,
    rejectOnRateLimit: () => true,
  }).setToken(options.token);
  let me: APIUser;
  try {
    me = (await rest.get(Routes.user())) as APIUser;
  } catch (error) {
    return { ok: false, detail: toChannelError('users/@me', error).message };
  }
  if (me.bot !== true) return { ok: false, detail: 'the token is not a bot’s: DISCORD_BOT_TOKEN is the token on the Bot page of the application' };
  const accepted = `token accepted: ${me.username}${options.apiUrl === undefined ? '' : ` at ${options.apiUrl}`}`;
  // Without the Message Content intent switched on, Discord refuses the gateway connection Roster asks for.
  let application: { flags?: number };
  try {
    application = (await rest.get(Routes.currentApplication())) as { flags?: number };
  } catch (error) {
    return { ok: false, detail: `${accepted}, but ${toChannelError('applications/@me', error).message}` };
  }
  const messageContent = ApplicationFlags.GatewayMessageContent | ApplicationFlags.GatewayMessageContentLimited;
  if (((application.flags ?? 0) & messageContent) === 0) {
    return { ok: false, detail: `${accepted}, but the Message Content intent is off: switch it on in the Developer Portal (Bot → Privileged Gateway Intents)` };
  }
  return { ok: true, detail: accepted };
}

/**
 * How many gateway shards Discord recommends for this bot (`GET /gateway/bot`,
 * its `shards`: one per 1,000 servers or so), within `timeoutMs` (default
 * 10 s). Throws a ChannelError that says why when Discord cannot be asked.
 */
export async function discordGatewayShards(options: { token: string; apiUrl?: string; timeoutMs?: number }): Promise<number> {
  const rest = new REST({
    ...(options.apiUrl === undefined ? {} : { api: options.apiUrl.replace(/\/+$/, '') }),
    timeout: options.timeoutMs ?? 10_000,
    retries: 1,
  }).setToken(options.token);
  let answer: { shards?: unknown };
  try {
    answer = (await rest.get(Routes.gatewayBot())) as { shards?: unknown };
  } catch (error) {
    throw toChannelError('asking for the gateway’s shard count (gateway/bot)', error);
  }
  const shards = answer.shards;
  if (typeof shards !== 'number' || !Number.isInteger(shards) || shards < 1) throw new ChannelError('failed', 'Discord’s gateway/bot answered without a shard count.');
  return shards;
}
