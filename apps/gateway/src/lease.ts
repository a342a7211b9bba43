import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Database } from '@roster/db';

/** A lease this process holds on one bot account. */
export interface HeldLease {
  channel: string;
  account: string;
  /** The fencing token: it changes whenever the account changes hands. */
  token: number;
}

/** Who holds an account now, for `roster doctor` and the logs. */
export interface LeaseHolder {
  holder: string;
  token: number;
  expiresAt: Date;
}

/** A lease row as stored: who holds (or last held) an account, since when, until when, and why it was let go. */
export interface LeaseRow {
  channel: string;
  account: string;
  holder: string;
  token: number;
  acquiredAt: Date;
  expiresAt: Date;
  /** Whether the lease is in force now (by the database's clock). */
  held: boolean;
  lastError: string | null;
  releasedAt: Date | null;
}

/**
 * The leases on bot accounts, in Postgres (the embedded database too): one
 * row per channel account. Taking one succeeds when there is none, when it
 * lapsed, or when this process already holds it; each change of holder bumps
 * the fencing token. Renewing succeeds only while the row still carries this
 * holder and token, so a process paused past its lease learns that it lost
 * it before it sends again.
 */
export function createLeaseStore(database: Database) {
  return {
    async acquire(channel: string, account: string, holder: string, ttlMs: number): Promise<HeldLease | null> {
      return database.adminScope('gateway: take a bot account’s lease', async (tx) => {
        const { rows } = await tx.query<{ token: string }>(
          `insert into channel_leases (channel, account, holder, token, expires_at)
           values ($1, $2, $3, 1, now() + make_interval(secs => $4::double precision / 1000))
           on conflict (channel, account) do update
             set holder = excluded.holder,
                 token = channel_leases.token + case when channel_leases.holder = excluded.holder then 0 else 1 end,
                 acquired_at = case when channel_leases.holder = excluded.holder then channel_leases.acquired_at else now() end,
                 renewed_at = now(),
                 expires_at = excluded.expires_at,
                 last_error = null,
                 released_at = null
             where channel_leases.expires_at < now() or channel_leases.holder = excluded.holder
           returning token`,
          [channel, account, holder, ttlMs],
        );
        return rows[0] === undefined ? null : { channel, account, token: Number(rows[0].token) };
      });
    },

    async renew(lease: HeldLease, holder: string, ttlMs: number): Promise<boolean> {
      return database.adminScope('gateway: renew a bot account’s lease', async (tx) => {
        const { rowCount } = await tx.query(
          `update channel_leases set renewed_at = now(), expires_at = now() + make_interval(secs => $5::double precision / 1000)
           where channel = $1 and account = $2 and holder = $3 and token = $4 and expires_at >= now()`,
          [lease.channel, lease.account, holder, lease.token, ttlMs],
        );
        return (rowCount ?? 0) === 1;
      });
    },

    /** Let the lease go at once; `error` says why when the channel failed (shown by `roster channel list` and the doctor until another gateway takes it). */
    async release(lease: HeldLease, holder: string, error?: string): Promise<void> {
      await database.adminScope('gateway: release a bot account’s lease', (tx) =>
        tx.query(
          `update channel_leases set expires_at = now() - interval '1 millisecond', released_at = now(), last_error = $5
           where channel = $1 and account = $2 and holder = $3 and token = $4`,
          [lease.channel, lease.account, holder, lease.token, error === undefined ? null : error.slice(0, 500)],
        ),
      );
    },

    /** Every account's lease row as it stands, held or not, for the reports of who receives what. */
    async rows(): Promise<LeaseRow[]> {
      return database.adminScope('gateway: read the bot accounts’ leases', async (tx) => {
        const { rows } = await tx.query<{ channel: string; account: string; holder: string; token: string; acquired_at: Date; expires_at: Date; held: boolean; last_error: string | null; released_at: Date | null }>(
          `select channel, account, holder, token, acquired_at, expires_at, expires_at >= now() as held, last_error, released_at from channel_leases order by channel, account`,
        );
        return rows.map((row) => ({
          channel: row.channel,
          account: row.account,
          holder: row.holder,
          token: Number(row.token),
          acquiredAt: row.acquired_at,
          expiresAt: row.expires_at,
          held: row.held,
          lastError: row.last_error,
          releasedAt: row.released_at,
        }));
      });
    },

    /** Every account's lease, held or lapsed, for metrics: channel, account, holder and whether it is held now. */
    async list(): Promise<Array<{ channel: string; account: string; holder: string; held: boolean }>> {
      return database.adminScope('gateway: read the bot accounts’ leases', async (tx) => {
        const { rows } = await tx.query<{ channel: string; account: string; holder: string; held: boolean }>(
          `select channel, account, holder, expires_at >= now() as held from channel_leases order by channel, account`,
        );
        return rows;
      });
    },

    /** Say this gateway stands for `channel` for `ttlMs` more (a row per channel and gateway, renewed with its leases). */
    async announce(channel: string, holder: string, ttlMs: number): Promise<void> {
      await database.adminScope('gateway: say it stands for a channel', (tx) =>
        tx.query(
          `insert into gateway_presence (channel, holder, expires_at) values ($1, $2, now() + make_interval(secs => $3::double precision / 1000))
           on conflict (channel, holder) do update set expires_at = excluded.expires_at`,
          [channel, holder, ttlMs],
        ),
      );
    },

    /** This gateway no longer stands for these channels (it stops, or they are no longer configured); rows lapsed an hour ago are swept. */
    async withdraw(channels: readonly string[], holder: string): Promise<void> {
      await database.adminScope('gateway: no longer stand for channels', (tx) =>
        tx.query(`delete from gateway_presence where (holder = $1 and channel = any($2::text[])) or expires_at < now() - interval '1 hour'`, [holder, [...channels]]),
      );
    },

    /** How many gateways stand for `channel` now (at least 1: the one asking). */
    async present(channel: string): Promise<number> {
      return database.adminScope('gateway: count the gateways of a channel', async (tx) => {
        const { rows } = await tx.query<{ count: string }>(`select count(*) as count from gateway_presence where channel = $1 and expires_at >= now()`, [channel]);
        return Math.max(1, Number(rows[0]?.count ?? 0));
      });
    },

    async holderOf(channel: string, account: string): Promise<LeaseHolder | null> {
      return database.adminScope('gateway: read who holds a bot account', async (tx) => {
        const { rows } = await tx.query<{ holder: string; token: string; expires_at: Date }>(
          `select holder, token, expires_at from channel_leases where channel = $1 and account = $2 and expires_at >= now()`,
          [channel, account],
        );
        const row = rows[0];
        return row === undefined ? null : { holder: row.holder, token: Number(row.token), expiresAt: row.expires_at };
      });
    },
  };
}

export type LeaseStore = ReturnType<typeof createLeaseStore>;

/** This process's name as a lease holder: the host, the process id and a random part (a restarted process is a new holder). */
export function leaseHolderName(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}
