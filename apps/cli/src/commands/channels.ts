import { channelNames, channelPlugins, findChannelPlugin } from '@roster/channel-registry';
import { createChannelCredentialStore } from '@roster/channel-host';
import type { Config } from '@roster/config';
import type { AnyChannelPlugin } from '@roster/contracts';
import type { ChannelBinding } from '@roster/core';
import { UsageError } from '@roster/errors';
import { channelHost, channelStates, describeAccounts } from '@roster/gateway';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { openRoster } from './roster-runtime.js';

const policies = ['pairing', 'allowlist', 'open'] as const;

function channelOf(value: string | undefined, usage: string): AnyChannelPlugin {
  if (value === undefined) throw new UsageError(`Name the channel: ${usage}.`);
  const plugin = findChannelPlugin(value);
  if (plugin === undefined) throw new UsageError(`A channel is one of ${channelNames.join(', ')}, got ${JSON.stringify(value)}.`);
  return plugin;
}

function describe(binding: ChannelBinding, config?: Pick<Config, 'channels'>): string {
  const who = binding.agent === null ? 'the whole wallet' : binding.agent;
  const let_in =
    binding.policy === 'open'
      ? 'anyone (strangers as guests: no memory, no tools)'
      : binding.policy === 'allowlist'
        ? `linked people and ${binding.allowlist.length === 0 ? 'no one else' : binding.allowlist.join(', ')}`
        : 'linked people only (strangers get the pairing hint)';
  let where = '';
  const rooms = findChannelPlugin(binding.channel)?.boundRooms;
  if (rooms !== undefined && binding.account === 'default') {
    const fromEnvironment = rooms.variable === undefined ? undefined : (config?.channels[rooms.variable] as string[] | undefined);
    const label = rooms.label.replace(/^\S+ /, '');
    if (fromEnvironment !== undefined) where = `; in ${label} ${fromEnvironment.join(', ')} (${rooms.variable}) without a mention`;
    else if (binding.boundChannels.length > 0) where = `; in ${label} ${binding.boundChannels.join(', ')} without a mention`;
  }
  return `${binding.channel}${binding.account === 'default' ? '' : ` (${binding.account})`} → ${who}; answers ${let_in}${where}`;
}

/**
 * The ids given with the plugin's bound-rooms option (repeated, or a comma
 * list); `none` alone clears them. Checked before anything is stored: a wrong
 * one changes nothing.
 */
function boundRoomsOf(plugin: AnyChannelPlugin, given: string[]): string[] {
  const rooms = plugin.boundRooms!;
  const option = `--${rooms.option}`;
  const ids = [...new Set(given.flatMap((value) => value.split(',')).map((id) => id.trim()).filter((id) => id !== ''))];
  if (ids.length === 1 && ids[0] === 'none') return [];
  for (const id of ids) {
    const wrong = rooms.check(id);
    if (wrong !== null) throw new UsageError(`${option}: ${wrong} Or none, to clear them.`);
  }
  if (ids.length === 0) throw new UsageError(`${option} takes ${rooms.label} by id (a comma list, or the option repeated), or none to clear them.`);
  if (ids.length > rooms.max) throw new UsageError(`${option} takes at most ${rooms.max} ids, got ${ids.length}.`);
  return ids;
}

/** The usage line of `roster channel add`, from the registry. */
function addUsage(): string {
  const forms = channelPlugins.map((plugin) => {
    const options = Object.values(plugin.credentials).map((field) => `--${field.option} …`);
    const extras = [...(plugin.boundRooms === undefined ? [] : [`[--${plugin.boundRooms.option} ID[,ID]]`]), ...(plugin.link === undefined ? [] : [`[--${plugin.link.skipOption}]`])];
    return [plugin.name, ...options, ...extras].join(' ');
  });
  return `roster channel add ${forms.join(' | ')} [--agent NAME] [--policy pairing|allowlist|open] [--allow HANDLE]…`;
}

/** A secret given as `-` is read from standard input (one line), so it stays out of the shell's history and the process list. */
async function secretValue(value: string, option: string): Promise<string> {
  if (value !== '-') return value;
  if (process.stdin.isTTY) throw new UsageError(`--${option} - reads the value from standard input: pipe it in (e.g. < token.txt).`);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split('\n')[0]!.trim();
}

/** roster channel add CHANNEL [its credential options] [its bound-rooms option] [--account A] [--agent NAME] [--policy pairing|allowlist|open] [--allow HANDLE …] */
export async function runChannelAdd(args: string[], io: CommandIo): Promise<number> {
  const usage = addUsage();
  // Every registered channel's options are known to the parser; each channel then takes only its own.
  const pluginOptions = Object.fromEntries(
    channelPlugins.flatMap((plugin) => [
      ...Object.values(plugin.credentials).map((field) => [field.option, { type: 'string' as const }]),
      ...(plugin.boundRooms === undefined ? [] : [[plugin.boundRooms.option, { type: 'string' as const, multiple: true as const }]]),
      ...(plugin.link === undefined ? [] : [[plugin.link.skipOption, { type: 'boolean' as const }]]),
    ]),
  );
  const { values, positionals } = parseCommand(
    args,
    { ...pluginOptions, account: { type: 'string' }, agent: { type: 'string' }, policy: { type: 'string' }, allow: { type: 'string', multiple: true }, json: { type: 'boolean' } },
    true,
  );
  if (positionals.length !== 1) throw new UsageError(`Name one channel: ${usage}.`);
  const plugin = channelOf(positionals[0], usage);
  const channel = plugin.name;
  const policy = (values.policy as string | undefined) ?? 'pairing';
  if (!(policies as readonly string[]).includes(policy)) throw new UsageError(`--policy is one of ${policies.join(', ')}, got ${JSON.stringify(policy)}.`);
  const allow = (values.allow as unknown as string[] | undefined) ?? [];
  if (allow.length > 0 && policy !== 'allowlist') throw new UsageError('--allow lists handles for --policy allowlist only.');
  // Credentials: only the options this channel takes.
  const own = new Set([
    ...Object.values(plugin.credentials).map((field) => field.option),
    ...(plugin.boundRooms === undefined ? [] : [plugin.boundRooms.option]),
    ...(plugin.link === undefined ? [] : [plugin.link.skipOption]),
  ]);
  for (const option of Object.keys(pluginOptions)) {
    if (values[option] === undefined || own.has(option)) continue;
    const takes = Object.values(plugin.credentials).map((field) => `--${field.option}`);
    throw new UsageError(`${channel} takes ${takes.length === 0 ? 'no token option' : takes.join(', ')}, not --${option}.`);
  }
  const secrets: Record<string, string> = {};
  for (const [name, field] of Object.entries(plugin.credentials)) {
    const value = values[field.option];
    if (typeof value === 'string') secrets[name] = await secretValue(value, field.option);
  }
  const account = typeof values.account === 'string' ? values.account : 'default';
  if (Object.keys(secrets).length > 0 && account !== 'default') {
    throw new UsageError('Roster serves one bot per channel, the default account: give tokens without --account.');
  }
  const roomIds = plugin.boundRooms === undefined ? undefined : (values[plugin.boundRooms.option] as unknown as string[] | undefined);
  if (roomIds !== undefined && account !== 'default') throw new UsageError(`Roster serves one bot per channel, the default account: give --${plugin.boundRooms!.option} without --account.`);
  const boundRooms = roomIds === undefined ? undefined : boundRoomsOf(plugin, roomIds);
  const { database, roster, key, logger, config } = await openRoster(io);
  try {
    const credentials = createChannelCredentialStore(database, key, channelPlugins);
    if (Object.keys(secrets).length > 0) {
      // Checked before anything is bound: a wrong token changes nothing.
      await credentials.set(channel, secrets);
      io.err(`Stored ${Object.keys(secrets).map((name) => plugin.credentials[name]!.label).join(' and ')} for ${channel}, sealed with the installation key. A running gateway picks it up within seconds.`);
    }
    const bindingGiven = typeof values.agent === 'string' || values.policy !== undefined || allow.length > 0 || typeof values.account === 'string';
    if (Object.keys(secrets).length > 0 && !bindingGiven && boundRooms === undefined) {
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
    if (boundRooms === undefined) binding = await bind();
    else {
      if (bindingGiven) await bind();
      // Bound rooms given alone keep the binding's agent and policy.
      binding = await roster.core.directory.setBoundChannels(channel, boundRooms);
    }
    io.out(values.json === true ? JSON.stringify(binding) : `Bound ${describe(binding, config)}.`);
    const roomsVariable = plugin.boundRooms?.variable;
    if (boundRooms !== undefined && roomsVariable !== undefined && config.channels[roomsVariable] !== undefined) {
      io.err(`${roomsVariable} is set in the environment and wins: the gateway serves the ones it names, not these.`);
    }
    if (plugin.link !== undefined && values[plugin.link.skipOption] !== true) {
      // A channel with no token to store: Roster becomes a linked device of the account whose phone scans the code.
      const stop = new AbortController();
      void io.stopSignal.then(() => stop.abort());
      const link = await plugin.link.run(channelHost({ logger, key, database }), {
        account: binding.account,
        signal: stop.signal,
        onCode(text, index) {
          if (index === 0) io.err(plugin.link!.instructions);
          else io.err('A new code (the last one expired):');
          io.err(text);
        },
      });
      io.out(
        link.already
          ? `${plugin.label} is linked already, as ${link.who}; to link another number, unlink this device on the phone first.`
          : `Linked ${plugin.label} as ${link.who}.`,
      );
    }
    const state = channelStates(config, { credentials: await credentials.open(), bindings: [] }).find((entry) => entry.channel === channel);
    if (state !== undefined && !state.configured) {
      io.err(`${channel} ${state.detail.startsWith('not') ? 'is ' : ''}${state.detail}: the gateway serves it once ${Object.keys(plugin.credentials).length === 0 ? 'it is enabled' : 'its token is set'}.`);
    }
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
    const statuses = channelStates(config, { credentials: await createChannelCredentialStore(database, key, channelPlugins).open(), bindings });
    // Who receives each configured bot account now (the leases): receiving, or failing and why.
    const accounts = await describeAccounts(database, statuses);
    const channels = statuses.map((status) => ({
      channel: status.channel,
      configured: status.configured,
      detail: status.detail,
      accounts: accounts.filter((account) => account.channel === status.channel),
      bindings: bindings.filter((binding) => binding.channel === status.channel),
    }));
    if (values.json === true) io.out(JSON.stringify(channels));
    else {
      for (const entry of channels) {
        io.out(`${entry.channel.padEnd(8)}  ${entry.detail}`);
        for (const account of entry.accounts) io.out(`          ${account.state}: ${account.detail}`);
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
  const usage = `roster channel remove ${channelNames.join('|')} [--account A]`;
  const { values, positionals } = parseCommand(args, { account: { type: 'string' } }, true);
  if (positionals.length !== 1) throw new UsageError(`Name one channel: ${usage}.`);
  const plugin = channelOf(positionals[0], usage);
  const channel = plugin.name;
  const { database, roster, key, config } = await openRoster(io);
  try {
    const account = typeof values.account === 'string' ? values.account : 'default';
    const unbound = await roster.core.directory.unbindChannel(channel, account);
    const credentials = Object.keys(plugin.credentials).length === 0 ? 0 : await createChannelCredentialStore(database, key, channelPlugins).clear(channel, account);
    const named = `${channel}${account === 'default' ? '' : ` (${account})`}`;
    if (!unbound && credentials === 0) {
      io.err(`${named} has no binding and no stored token; nothing changed.`);
      return exitCode.failure;
    }
    if (unbound) io.out(`Removed the ${named} binding: it answers linked people only again, talking to the wallet.`);
    if (credentials > 0) {
      const status = channelStates(config).find((entry) => entry.channel === channel);
      io.out(`Removed the stored token${credentials === 1 ? '' : 's'} of ${named}${status?.configured === true ? '; the one in the environment stays in force' : ': a running gateway stops serving it within seconds'}.`);
    }
    return exitCode.ok;
  } finally {
    await database.close();
  }
}
