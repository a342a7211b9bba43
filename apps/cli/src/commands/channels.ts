import { linkWhatsApp, qrText } from '@roster/channel-whatsapp';
import type { Channel, ChannelBinding } from '@roster/core';
import { UsageError } from '@roster/errors';
import { channelStatus } from '@roster/gateway';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { loadConfig } from '../runtime.js';
import { openRoster } from './roster-runtime.js';

const bindable = ['telegram', 'slack', 'discord', 'whatsapp'] as const;
const policies = ['pairing', 'allowlist', 'open'] as const;

function channelOf(value: string | undefined, usage: string): Channel {
  if (value === undefined) throw new UsageError(`Name the channel: ${usage}.`);
  if (!(bindable as readonly string[]).includes(value)) throw new UsageError(`A channel is one of ${bindable.join(', ')}, got ${JSON.stringify(value)}.`);
  return value as Channel;
}

function describe(binding: ChannelBinding): string {
  const who = binding.agent === null ? 'the whole wallet' : binding.agent;
  const let_in =
    binding.policy === 'open'
      ? 'anyone (strangers as guests: no memory, no tools)'
      : binding.policy === 'allowlist'
        ? `linked people and ${binding.allowlist.length === 0 ? 'no one else' : binding.allowlist.join(', ')}`
        : 'linked people only (strangers get the pairing hint)';
  return `${binding.channel}${binding.account === 'default' ? '' : ` (${binding.account})`} → ${who}; answers ${let_in}`;
}

/** roster channel add CHANNEL [--account A] [--agent NAME] [--policy pairing|allowlist|open] [--allow HANDLE …] [--bind-only] */
export async function runChannelAdd(args: string[], io: CommandIo): Promise<number> {
  const usage = 'roster channel add telegram|slack|whatsapp [--agent NAME] [--policy pairing|allowlist|open] [--allow HANDLE]…';
  const { values, positionals } = parseCommand(
    args,
    {
      account: { type: 'string' },
      agent: { type: 'string' },
      policy: { type: 'string' },
      allow: { type: 'string', multiple: true },
      json: { type: 'boolean' },
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
  const { database, roster, key, logger } = await openRoster(io);
  try {
    const binding = await roster.core.directory.bindChannel({
      channel,
      policy: policy as ChannelBinding['policy'],
      allowlist: allow,
      ...(typeof values.account === 'string' ? { account: values.account } : {}),
      ...(typeof values.agent === 'string' ? { agent: values.agent } : {}),
    });
    io.out(values.json === true ? JSON.stringify(binding) : `Bound ${describe(binding)}.`);
    if (channel === 'whatsapp' && values['bind-only'] !== true) {
      // WhatsApp has no token: Roster becomes a linked device of the account whose phone scans the code.
      const stop = new AbortController();
      void io.stopSignal.then(() => stop.abort());
      let shown = 0;
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
    const { config } = loadConfig(io);
    const status = channelStatus(config).find((entry) => entry.channel === channel);
    if (status !== undefined && !status.configured) io.err(`${channel} is ${status.detail}: the gateway serves it once ${channel === 'whatsapp' ? 'it is enabled' : 'its token is set'}.`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

/** roster channel list [--json] */
export async function runChannelList(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { json: { type: 'boolean' } });
  const { database, roster, config } = await openRoster(io);
  try {
    const bindings = await roster.core.directory.listBindings();
    const statuses = channelStatus(config);
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
        for (const binding of entry.bindings) io.out(`          ${describe(binding)}`);
      }
    }
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

/** roster channel remove CHANNEL [--account A] */
export async function runChannelRemove(args: string[], io: CommandIo): Promise<number> {
  const usage = 'roster channel remove telegram|slack|whatsapp [--account A]';
  const { values, positionals } = parseCommand(args, { account: { type: 'string' } }, true);
  if (positionals.length !== 1) throw new UsageError(`Name one channel: ${usage}.`);
  const channel = channelOf(positionals[0], usage);
  const { database, roster } = await openRoster(io);
  try {
    const account = typeof values.account === 'string' ? values.account : 'default';
    const removed = await roster.core.directory.unbindChannel(channel, account);
    if (!removed) {
      io.err(`${channel}${account === 'default' ? '' : ` (${account})`} has no binding; nothing changed.`);
      return exitCode.failure;
    }
    io.out(`Removed the ${channel} binding: it answers linked people only again, talking to the wallet. Its token stays in the environment.`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}
