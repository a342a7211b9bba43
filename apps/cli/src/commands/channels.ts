import { createChannelCredentialStore, credentialSpecs, type CredentialChannel } from '@roster/channels';
import { discordChannelIdPattern, maxDiscordBoundChannels, type Config } from '@roster/config';
import type { Channel, ChannelBinding } from '@roster/core';
import { UsageError } from '@roster/errors';
// The light part of the gateway: the channel commands do not load every platform's library.
import { channelStatus, withStoredCredentials } from '@roster/gateway/settings';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { openRoster } from './roster-runtime.js';

const bindable = ['telegram', 'slack', 'discord', 'whatsapp'] as const;
const policies = ['pairing', 'allowlist', 'open'] as const;

function channelOf(value: string | undefined, usage: string): Channel {
  if (value === undefined) throw new UsageError(`Name the channel: ${usage}.`);
  if (!(bindable as readonly string[]).includes(value)) throw new UsageError(`A channel is one of ${bindable.join(', ')}, got ${JSON.stringify(value)}.`);
  return value as Channel;
}

function describe(binding: ChannelBinding, config?: Pick<Config, 'DISCORD_CHANNELS'>): string {
  const who = binding.agent === null ? 'the whole wallet' : binding.agent;
  const let_in =
    binding.policy === 'open'
      ? 'anyone (strangers as guests: no memory, no tools)'
      : binding.policy === 'allowlist'
        ? `linked people and ${binding.allowlist.length === 0 ? 'no one else' : binding.allowlist.join(', ')}`
        : 'linked people only (strangers get the pairing hint)';
  let where = '';
  if (binding.channel === 'discord' && binding.account === 'default') {
    const fromEnvironment = config?.DISCORD_CHANNELS;
    if (fromEnvironment !== undefined) where = `; in server channels ${fromEnvironment.join(', ')} (DISCORD_CHANNELS) without a mention`;
    else if (binding.boundChannels.length > 0) where = `; in server channels ${binding.boundChannels.join(', ')} without a mention`;
  }
  return `${binding.channel}${binding.account === 'default' ? '' : ` (${binding.account})`} → ${who}; answers ${let_in}${where}`;
}

/**
 * The ids given with --channel (repeated, or a comma list); `none` alone
 * clears them. Checked before anything is stored: a wrong one changes nothing.
 */
function boundChannelsOf(given: string[]): string[] {
  const ids = [...new Set(given.flatMap((value) => value.split(',')).map((id) => id.trim()).filter((id) => id !== ''))];
  if (ids.length === 1 && ids[0] === 'none') return [];
  const wrong = ids.find((id) => !discordChannelIdPattern.test(id));
  if (wrong !== undefined) {
    throw new UsageError(`--channel takes Discord channel ids, 17 to 20 digits (Developer Mode on, then right-click the channel → Copy Channel ID), or none; got ${JSON.stringify(wrong)}.`);
  }
  if (ids.length === 0) throw new UsageError('--channel takes Discord channel ids (a comma list, or the option repeated), or none to clear them.');
  if (ids.length > maxDiscordBoundChannels) throw new UsageError(`--channel takes at most ${maxDiscordBoundChannels} channel ids, got ${ids.length}.`);
  return ids;
}

/** The options that carry a channel's credentials, by the credential each stores. */
const credentialOptions: Record<CredentialChannel, Record<string, string>> = {
  telegram: { token: 'bot_token' },
  slack: { 'bot-token': 'bot_token', 'signing-secret': 'signing_secret', 'app-token': 'app_token' },
  discord: { token: 'bot_token' },
};

/** A secret given as `-` is read from standard input (one line), so it stays out of the shell's history and the process list. */
async function secretValue(value: string, option: string): Promise<string> {
  if (value !== '-') return value;
  if (process.stdin.isTTY) throw new UsageError(`--${option} - reads the value from standard input: pipe it in (e.g. < token.txt).`);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split('\n')[0]!.trim();
}

/** roster channel add CHANNEL [--token T | --bot-token T --signing-secret S | --app-token A] [--channel ID[,ID]…] [--account A] [--agent NAME] [--policy pairing|allowlist|open] [--allow HANDLE …] */
export async function runChannelAdd(args: string[], io: CommandIo): Promise<number> {
  const usage =
    'roster channel add telegram|discord --token T | slack --bot-token T (--signing-secret S | --app-token A) | whatsapp [--bind-only] [--channel ID[,ID]] (discord) [--agent NAME] [--policy pairing|allowlist|open] [--allow HANDLE]…';
  const { values, positionals } = parseCommand(
    args,
    {
      account: { type: 'string' },
      agent: { type: 'string' },
      policy: { type: 'string' },
      allow: { type: 'string', multiple: true },
      channel: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      token: { type: 'string' },
      'bot-token': { type: 'string' },
      'signing-secret': { type: 'string' },
      'app-token': { type: 'string' },
      'bind-only': { type: 'boolean' },
    },
    true,
  );
  if (positionals.length !== 1) throw new UsageError(`Name one channel: ${usage}.`);
  const channel = channelOf(positionals[0], usage);
  const policy = (values.policy as string | undefined) ?? 'pairing';
  if (!(policies as readonly string[]).includes(policy)) throw new UsageError(`--policy is one of ${policies.join(', ')}, got ${JSON.stringify(policy)}.`);
  const allow = (values.allow as unknown as string[] | undefined) ?? [];
  if (allow.length > 0 && policy !== 'allowlist') throw new UsageError('--allow lists handles for --policy allowlist only.');
  // Credentials: only the options this channel takes.
  const accepted = (credentialOptions as Record<string, Record<string, string>>)[channel] ?? {};
  const secrets: Record<string, string> = {};
  for (const option of ['token', 'bot-token', 'signing-secret', 'app-token']) {
    const value = values[option];
    if (typeof value !== 'string') continue;
    const name = accepted[option];
    if (name === undefined) {
      const takes = Object.keys(accepted).map((known) => `--${known}`);
      throw new UsageError(`${channel} takes ${takes.length === 0 ? 'no token option' : takes.join(', ')}, not --${option}.`);
    }
    secrets[name] = await secretValue(value, option);
  }
  const account = typeof values.account === 'string' ? values.account : 'default';
  if (Object.keys(secrets).length > 0 && account !== 'default') {
    throw new UsageError('Roster serves one bot per channel, the default account: give tokens without --account.');
  }
  const channelIds = values.channel as unknown as string[] | undefined;
  if (channelIds !== undefined && channel !== 'discord') throw new UsageError(`--channel binds Discord server channels; ${channel} has none.`);
  if (channelIds !== undefined && account !== 'default') throw new UsageError('Roster serves one bot per channel, the default account: give --channel without --account.');
  const boundChannels = channelIds === undefined ? undefined : boundChannelsOf(channelIds);
  const { database, roster, key, logger, config } = await openRoster(io);
  try {
    const credentials = createChannelCredentialStore(database, key);
    if (Object.keys(secrets).length > 0) {
      // Checked before anything is bound: a wrong token changes nothing.
      await credentials.set(channel, secrets);
      io.err(`Stored ${Object.keys(secrets).map((name) => credentialSpecs[channel as CredentialChannel][name]!.label).join(' and ')} for ${channel}, sealed with the installation key. A running gateway picks it up within seconds.`);
    }
    const bindingGiven = typeof values.agent === 'string' || values.policy !== undefined || allow.length > 0 || typeof values.account === 'string';
    if (Object.keys(secrets).length > 0 && !bindingGiven && boundChannels === undefined) {
      // Only a token: the channel's binding, if any, stays as it was.
      const current = (await roster.core.directory.listBindings()).find((entry) => entry.channel === channel && entry.account === 'default');
      if (values.json === true) io.out(JSON.stringify(current ?? null));
      else io.out(current === undefined ? `${channel}: no binding, so linked people talk to the wallet (bind it with --agent or --policy).` : `Kept ${describe(current, config)}.`);
      return exitCode.ok;
    }
    const bind = () =>
      roster.core.directory.bindChannel({
        channel,
        policy: policy as ChannelBinding['policy'],
        allowlist: allow,
        ...(typeof values.account === 'string' ? { account: values.account } : {}),
        ...(typeof values.agent === 'string' ? { agent: values.agent } : {}),
      });
    let binding: ChannelBinding;
    if (boundChannels === undefined) binding = await bind();
    else {
      if (bindingGiven) await bind();
      // Bound channels given alone keep the binding's agent and policy.
      binding = await roster.core.directory.setBoundChannels(channel, boundChannels);
    }
    io.out(values.json === true ? JSON.stringify(binding) : `Bound ${describe(binding, config)}.`);
    if (boundChannels !== undefined && config.DISCORD_CHANNELS !== undefined) {
      io.err('DISCORD_CHANNELS is set in the environment and wins: the gateway serves the channels it names, not these.');
    }
    if (channel === 'whatsapp' && values['bind-only'] !== true) {
      // WhatsApp has no token: Roster becomes a linked device of the account whose phone scans the code.
      const stop = new AbortController();
      void io.stopSignal.then(() => stop.abort());
      let shown = 0;
      const { linkWhatsApp, qrText } = await import('@roster/channel-whatsapp');
      const link = await linkWhatsApp({
        database,
        key,
        logger,
        account: binding.account,
        signal: stop.signal,
        async onQr(qr) {
          if (shown++ === 0) io.err('On the phone: WhatsApp → Settings → Linked devices → Link a device, then scan this code (a new one comes every 20 seconds):');
          else io.err('A new code (the last one expired):');
          io.err(await qrText(qr));
        },
      });
      io.out(link.already ? `WhatsApp is linked already, as ${link.phone}; to link another number, unlink this device on the phone first.` : `Linked WhatsApp as ${link.phone}.`);
    }
    const status = channelStatus(withStoredCredentials(config, await credentials.open())).find((entry) => entry.channel === channel);
    if (status !== undefined && !status.configured) io.err(`${channel} ${status.detail.startsWith('not') ? 'is ' : ''}${status.detail}: the gateway serves it once ${channel === 'whatsapp' ? 'it is enabled' : 'its token is set'}.`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

/** roster channel list [--json] */
export async function runChannelList(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { json: { type: 'boolean' } });
  const { database, roster, config, key } = await openRoster(io);
  try {
    const bindings = await roster.core.directory.listBindings();
    const statuses = channelStatus(withStoredCredentials(config, await createChannelCredentialStore(database, key).open()));
    const channels = statuses.map((status) => ({
      channel: status.channel,
      configured: status.configured,
      detail: status.detail,
      bindings: bindings.filter((binding) => binding.channel === status.channel),
    }));
    if (values.json === true) io.out(JSON.stringify(channels));
    else {
      for (const entry of channels) {
        io.out(`${entry.channel.padEnd(8)}  ${entry.detail}`);
        if (entry.configured && entry.bindings.length === 0) io.out('          no binding: linked people only, to the only agent or the one they pick with /agent');
        for (const binding of entry.bindings) io.out(`          ${describe(binding, config)}`);
      }
    }
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

/** roster channel remove CHANNEL [--account A]: its binding and its stored credentials. */
export async function runChannelRemove(args: string[], io: CommandIo): Promise<number> {
  const usage = 'roster channel remove telegram|slack|discord|whatsapp [--account A]';
  const { values, positionals } = parseCommand(args, { account: { type: 'string' } }, true);
  if (positionals.length !== 1) throw new UsageError(`Name one channel: ${usage}.`);
  const channel = channelOf(positionals[0], usage);
  const { database, roster, key, config } = await openRoster(io);
  try {
    const account = typeof values.account === 'string' ? values.account : 'default';
    const unbound = await roster.core.directory.unbindChannel(channel, account);
    const credentials = (credentialSpecs as Record<string, unknown>)[channel] === undefined ? 0 : await createChannelCredentialStore(database, key).clear(channel, account);
    const named = `${channel}${account === 'default' ? '' : ` (${account})`}`;
    if (!unbound && credentials === 0) {
      io.err(`${named} has no binding and no stored token; nothing changed.`);
      return exitCode.failure;
    }
    if (unbound) io.out(`Removed the ${named} binding: it answers linked people only again, talking to the wallet.`);
    if (credentials > 0) {
      const status = channelStatus(config).find((entry) => entry.channel === channel);
      io.out(`Removed the stored token${credentials === 1 ? '' : 's'} of ${named}${status?.configured === true ? '; the one in the environment stays in force' : ': a running gateway stops serving it within seconds'}.`);
    }
    return exitCode.ok;
  } finally {
    await database.close();
  }
}
