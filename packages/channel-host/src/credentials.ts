import type { InstallationKey } from '@roster/config';
import type { Database } from '@roster/db';
import type { CredentialField } from '@roster/contracts';
import { RosterError } from '@roster/errors';

/** What the store needs of each channel: its name and the credentials it takes (a channel plugin has both). */
export interface CredentialChannel {
  name: string;
  credentials: Readonly<Record<string, CredentialField>>;
}

/** Where a channel's stored credentials are said to be, without their values. */
export interface StoredCredentials {
  channel: string;
  account: string;
  /** The names set (`bot_token`, `signing_secret`, …). */
  names: string[];
  /** When one of them last changed. */
  updatedAt: Date;
}

/**
 * Channel credentials at rest: bot tokens and signing secrets entered on the
 * page or with `roster channel add`, sealed with the installation key (the
 * channel, account and name are the seal's context). Write only for people:
 * `list` says which are set; only the gateway opens them (`open`).
 */
export interface ChannelCredentialStore {
  /** Store (or replace) some of a channel's credentials; every value is checked first, and nothing is stored when one is wrong. */
  set(channel: string, values: Record<string, string>, account?: string): Promise<StoredCredentials>;
  /** Remove every stored credential of a channel's account; the number removed. */
  clear(channel: string, account?: string): Promise<number>;
  /** Which credentials are stored, per channel and account. */
  list(): Promise<StoredCredentials[]>;
  /** The values, for the process that connects to the platform: `{ channel: { account: { name: value } } }`. */
  open(): Promise<Record<string, Record<string, Record<string, string>>>>;
  /** A number that changes whenever a credential is set or cleared (for a gateway that reloads). */
  version(): Promise<string>;
}

const sealPurpose = 'channel-credential';
const contextOf = (channel: string, account: string, name: string) => `${channel}/${account}/${name}`;

function invalid(message: string): RosterError {
  return new RosterError('invalid_input', message);
}

/** The channel called `name` among those that take credentials; a clear error for any other. */
function credentialChannel(channels: readonly CredentialChannel[], name: string): CredentialChannel {
  const taking = channels.filter((channel) => Object.keys(channel.credentials).length > 0);
  const channel = taking.find((candidate) => candidate.name === name);
  if (channel === undefined) throw invalid(`Credentials are stored for ${taking.map((candidate) => candidate.name).join(', ')}, not ${JSON.stringify(name)}.`);
  return channel;
}

function checkAccount(account: string): string {
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(account)) throw invalid(`An account is 1 to 64 letters, digits, _ . : or -, got ${JSON.stringify(account)}.`);
  return account;
}

/** Check one value: never echoed back in the error, since it is a secret. */
function checkValue({ name: channel, credentials }: CredentialChannel, name: string, value: unknown): string {
  const spec = credentials[name];
  if (spec === undefined) {
    throw invalid(`${channel} takes ${Object.keys(credentials).join(', ')}, not ${JSON.stringify(name)}.`);
  }
  if (typeof value !== 'string' || value.trim() === '') throw invalid(`${channel} ${name} is empty: give ${spec.label}.`);
  const trimmed = value.trim();
  if (trimmed.length > 1024 || !/^[\x21-\x7e]+$/.test(trimmed)) {
    throw invalid(`${channel} ${name} is not a token: ${spec.label} is one word of printable characters, at most 1,024.`);
  }
  if (spec.prefix !== undefined && !trimmed.startsWith(spec.prefix)) {
    throw invalid(`${channel} ${name} should start with ${spec.prefix}: that looks like another kind of token.`);
  }
  return trimmed;
}

/** The store, for the channels that take credentials among `channels` (the registry's plugins). */
export function createChannelCredentialStore(database: Database, key: InstallationKey, channels: readonly CredentialChannel[]): ChannelCredentialStore {
  return {
    async set(channelName, values, accountName = 'default') {
      const spec = credentialChannel(channels, channelName);
      const channel = spec.name;
      const account = checkAccount(accountName);
      const entries = Object.entries(values);
      if (entries.length === 0) throw invalid(`Give at least one of ${Object.keys(spec.credentials).join(', ')} for ${channel}.`);
      const checked = entries.map(([name, value]) => [name, checkValue(spec, name, value)] as const);
      return database.adminScope('owner: store channel credentials', async (tx) => {
        for (const [name, value] of checked) {
          await tx.query(
            `insert into channel_credentials (channel, account, name, sealed) values ($1, $2, $3, $4)
             on conflict (channel, account, name) do update set sealed = excluded.sealed, updated_at = now()`,
            [channel, account, name, key.seal(sealPurpose, value, contextOf(channel, account, name))],
          );
        }
        const { rows } = await tx.query<{ names: string[]; updated_at: Date }>(
          'select array_agg(name order by name) as names, max(updated_at) as updated_at from channel_credentials where channel = $1 and account = $2',
          [channel, account],
        );
        return { channel, account, names: rows[0]!.names, updatedAt: rows[0]!.updated_at };
      });
    },

    async clear(channelName, accountName = 'default') {
      const channel = credentialChannel(channels, channelName).name;
      const account = checkAccount(accountName);
      return database.adminScope('owner: remove channel credentials', async (tx) => {
        const { rowCount } = await tx.query('delete from channel_credentials where channel = $1 and account = $2', [channel, account]);
        return rowCount ?? 0;
      });
    },

    list: () =>
      database.adminScope('owner: list channel credentials', async (tx) => {
        const { rows } = await tx.query<{ channel: string; account: string; names: string[]; updated_at: Date }>(
          `select channel, account, array_agg(name order by name) as names, max(updated_at) as updated_at
             from channel_credentials group by channel, account order by channel, account`,
        );
        return rows.map((row) => ({ channel: row.channel, account: row.account, names: row.names, updatedAt: row.updated_at }));
      }),

    open: () =>
      database.adminScope('gateway: open channel credentials', async (tx) => {
        const { rows } = await tx.query<{ channel: string; account: string; name: string; sealed: string }>('select channel, account, name, sealed from channel_credentials');
        const opened: Record<string, Record<string, Record<string, string>>> = {};
        for (const row of rows) {
          const accounts = (opened[row.channel] ??= {});
          (accounts[row.account] ??= {})[row.name] = key.open(sealPurpose, row.sealed, contextOf(row.channel, row.account, row.name));
        }
        return opened;
      }),

    version: () =>
      database.adminScope('gateway: look for changed channel credentials', async (tx) => {
        const { rows } = await tx.query<{ version: string }>(
          `select count(*)::text || ':' || coalesce(extract(epoch from max(updated_at))::text, '0') as version from channel_credentials`,
        );
        return rows[0]!.version;
      }),
  };
}
