import type { Database } from '@roster/db';
import { createLeaseStore, type LeaseRow } from './lease.js';
import { defaultAccount, type ChannelState } from './settings.js';

/**
 * A configured bot account as the installation stands now: `receiving` (a
 * live lease holder receives it), `standby` (another process receives it;
 * said only to a process that runs a gateway itself), or `failing`: nobody
 * receives it, and `detail` says why (the reason its last holder gave when
 * it let go, a lease that lapsed with nobody taking it, or no gateway ever).
 */
export interface AccountReport {
  channel: string;
  account: string;
  state: 'receiving' | 'standby' | 'failing';
  /** The process that receives it, or last did: `host:pid:id` (a restarted process has a new id). Null when none ever did, or every server receives it (webhooks). */
  holder: string | null;
  /** The holder's host and process id, read from its name. */
  host: string | null;
  pid: number | null;
  /** Since when the holder receives it (ISO 8601), or null. */
  since: string | null;
  detail: string;
}

/** `host:pid:id` read back into its parts (a host name may hold colons: an IPv6 address). */
export function holderParts(holder: string): { host: string; pid: number | null } {
  const parts = holder.split(':');
  if (parts.length < 3) return { host: holder, pid: null };
  const pid = Number(parts.at(-2));
  return { host: parts.slice(0, -2).join(':'), pid: Number.isInteger(pid) ? pid : null };
}

/**
 * Each configured channel's bot account: who receives it, from the leases.
 * `self` is the lease-holder name of a gateway in the asking process: an
 * account another process holds is then its `standby`. A channel every
 * server receives (webhooks) holds no lease and is reported receiving by its
 * mode. Throws when the leases cannot be read: the caller says so.
 */
export async function describeAccounts(database: Database, states: readonly ChannelState[], options: { self?: string } = {}): Promise<AccountReport[]> {
  const configured = states.flatMap((state) => (state.setup.state === 'configured' ? [{ channel: state.channel, setup: state.setup }] : []));
  if (configured.length === 0) return [];
  const rows = await createLeaseStore(database).rows();
  return configured.flatMap(({ channel, setup }) => {
    if (setup.exclusive === false) return [report(channel, defaultAccount, 'receiving', null, null, `${setup.mode ?? 'webhook'}: every running server receives it`)];
    const shards = shardRows(rows.filter((row) => row.channel === channel));
    if (shards !== null) return shards.map(({ account, row }) => fromLease(channel, account, row, options.self));
    return [fromLease(channel, defaultAccount, rows.find((row) => row.channel === channel && row.account === defaultAccount), options.self)];
  });
}

/**
 * An account received in parts (Discord's shards: `default shard 1/2`), as
 * its newest lease counts them: one entry per part, a part no gateway has
 * taken yet included. Null when it is received whole.
 */
function shardRows(rows: readonly LeaseRow[]): Array<{ account: string; row: LeaseRow | undefined }> | null {
  const parts = rows.flatMap((row) => {
    const match = /^default shard (\d+)\/(\d+)$/.exec(row.account);
    return match === null ? [] : [{ row, id: Number(match[1]), count: Number(match[2]) }];
  });
  if (parts.length === 0) return null;
  const newest = parts.reduce((a, b) => (b.row.acquiredAt > a.row.acquiredAt ? b : a));
  if (rows.some((row) => row.account === defaultAccount && row.acquiredAt > newest.row.acquiredAt)) return null;
  return Array.from({ length: newest.count }, (_, id) => {
    const account = `${defaultAccount} shard ${id}/${newest.count}`;
    return { account, row: parts.find((part) => part.row.account === account)?.row };
  });
}

function fromLease(channel: string, account: string, row: LeaseRow | undefined, self: string | undefined): AccountReport {
  if (row === undefined) return report(channel, account, 'failing', null, null, 'nobody receives it: no gateway has taken it yet (start roster gateway or roster start)');
  const since = row.acquiredAt.toISOString();
  if (row.held) {
    if (self !== undefined && row.holder !== self) return report(channel, account, 'standby', row.holder, since, `standby: ${row.holder} receives it since ${since}; this process takes it over if that lease lapses`);
    return report(channel, account, 'receiving', row.holder, since, `received by ${row.holder} since ${since}`);
  }
  const why =
    row.lastError !== null
      ? `its channel failed at ${row.releasedAt?.toISOString() ?? row.expiresAt.toISOString()}: ${row.lastError}`
      : row.releasedAt !== null
        ? `it let the account go at ${row.releasedAt.toISOString()} (a stop)`
        : `its lease lapsed at ${row.expiresAt.toISOString()} unrenewed (the process was killed, paused or cut off from the database)`;
  return report(channel, account, 'failing', row.holder, null, `nobody receives it: ${row.holder} did, and ${why}; no gateway has taken it over`);
}

function report(channel: string, account: string, state: AccountReport['state'], holder: string | null, since: string | null, detail: string): AccountReport {
  const parts = holder === null ? { host: null, pid: null } : holderParts(holder);
  return { channel, account, state, holder, host: parts.host, pid: parts.pid, since, detail };
}

/**
 * A failure's words as stored for the reports: any string of the channel's
 * settings (its tokens among them) taken out, and at most 300 characters.
 */
export function withoutSecrets(message: string, settings: string): string {
  let text = message;
  const strings: string[] = [];
  JSON.parse(settings === '' ? 'null' : settings, (_key, value: unknown) => {
    if (typeof value === 'string' && value.length >= 8) strings.push(value);
    return value;
  });
  for (const secret of strings) text = text.split(secret).join('…');
  return text.length > 300 ? `${text.slice(0, 299)}…` : text;
}
