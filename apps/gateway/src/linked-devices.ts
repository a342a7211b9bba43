import type { LinkedDeviceSession, LinkedDeviceStatus, LinkedDeviceStore } from '@roster/contracts';
import type { Database, Transaction } from '@roster/db';

interface SessionRow {
  status: LinkedDeviceStatus;
  phone: string | null;
  qr_sealed: string | null;
  creds_sealed: string | null;
  updated_at: Date;
}

/** Postgres' code for a relation that does not exist: a database not migrated to 0020 yet. */
const undefinedTable = '42P01';

/**
 * A linked device's session in Postgres, for its channel's plugin
 * (`ChannelHost.linkedDevice`): the link in `whatsapp_sessions`, the
 * device's keys in `whatsapp_keys` (migration 0020), one row each, every
 * value sealed by the plugin before it comes here. WhatsApp is the one
 * channel that links a device today, so these are its tables; another
 * would need its own (a migration) first, and is refused. Every statement
 * runs as roster_ops, the one role with a grant on them.
 */
export function createLinkedDeviceStore(database: Database, channel: string, account: string): LinkedDeviceStore {
  if (channel !== 'whatsapp') throw new Error(`Roster keeps a linked device's session for whatsapp only, not ${JSON.stringify(channel)}: its tables need a migration first.`);
  const run = <T>(what: string, fn: (tx: Transaction) => Promise<T>): Promise<T> => database.adminScope(`${channel}: ${what}`, fn);

  return {
    account,

    async read() {
      let row: SessionRow | undefined;
      try {
        row = await run('read the link', async (tx) => (await tx.query<SessionRow>('select status, phone, qr_sealed, creds_sealed, updated_at from whatsapp_sessions where account = $1', [account])).rows[0]);
      } catch (error) {
        if ((error as { code?: unknown }).code === undefinedTable) return null;
        throw error;
      }
      return row === undefined ? null : sessionOf(row);
    },

    async beginPairing() {
      return run('begin pairing', async (tx) => {
        const { rows } = await tx.query<{ status: string; creds: boolean }>('select status, creds_sealed is not null as creds from whatsapp_sessions where account = $1 for update', [account]);
        if (rows[0] !== undefined && rows[0].creds && rows[0].status !== 'logged_out') return false;
        await tx.query('delete from whatsapp_keys where account = $1', [account]);
        await tx.query('update whatsapp_sessions set creds_sealed = null where account = $1', [account]);
        return true;
      });
    },

    async showCode(codeSealed) {
      return run('show a QR code', async (tx) => {
        const { rowCount } = await tx.query(
          `insert into whatsapp_sessions (account, status, qr_sealed) values ($1, 'waiting_for_scan', $2)
           on conflict (account) do update set status = 'waiting_for_scan', qr_sealed = excluded.qr_sealed, updated_at = now()
           where whatsapp_sessions.creds_sealed is null or whatsapp_sessions.status = 'logged_out'`,
          [account, codeSealed],
        );
        return rowCount === 1;
      });
    },

    async saveCredentials(phone, credentialsSealed) {
      await run('store the credentials', (tx) =>
        tx.query(
          `insert into whatsapp_sessions (account, status, phone, creds_sealed, linked_at) values ($1, 'linked', $2, $3, now())
           on conflict (account) do update set creds_sealed = excluded.creds_sealed, phone = excluded.phone, qr_sealed = null,
             status = case when whatsapp_sessions.status in ('waiting_for_scan', 'logged_out') then 'linked' else whatsapp_sessions.status end,
             linked_at = case when whatsapp_sessions.creds_sealed is null or whatsapp_sessions.status = 'logged_out' then now() else whatsapp_sessions.linked_at end,
             updated_at = now()`,
          [account, phone, credentialsSealed],
        ),
      );
    },

    async setConnection(status) {
      await run('record the connection', (tx) =>
        tx.query(`update whatsapp_sessions set status = $2, updated_at = now() where account = $1 and creds_sealed is not null and status <> 'logged_out'`, [account, status]),
      );
    },

    async pairingEnded() {
      await run('end a pairing', (tx) => tx.query(`update whatsapp_sessions set qr_sealed = null, updated_at = now() where account = $1 and status = 'waiting_for_scan'`, [account]));
    },

    async loggedOut() {
      await run('record a logout', async (tx) => {
        await tx.query('delete from whatsapp_keys where account = $1', [account]);
        await tx.query(
          `insert into whatsapp_sessions (account, status) values ($1, 'logged_out')
           on conflict (account) do update set status = 'logged_out', creds_sealed = null, qr_sealed = null, updated_at = now()`,
          [account],
        );
      });
    },

    async readKeys(kind, ids) {
      const found = new Map<string, string>();
      if (ids.length === 0) return found;
      const rows = await run('read signal keys', async (tx) =>
        (await tx.query<{ id: string; value_sealed: string }>('select id, value_sealed from whatsapp_keys where account = $1 and kind = $2 and id = any($3::text[])', [account, kind, ids])).rows,
      );
      for (const { id, value_sealed } of rows) found.set(id, value_sealed);
      return found;
    },

    async writeKeys(changes) {
      const writes = changes.filter((change) => change.sealed !== null);
      const deletes = changes.filter((change) => change.sealed === null).map(({ kind, id }) => ({ kind, id }));
      if (writes.length === 0 && deletes.length === 0) return;
      await run('write signal keys', async (tx) => {
        if (writes.length > 0) {
          await tx.query(
            `insert into whatsapp_keys (account, kind, id, value_sealed)
             select $1, w.kind, w.id, w.sealed from jsonb_to_recordset($2::jsonb) as w(kind text, id text, sealed text)
             on conflict (account, kind, id) do update set value_sealed = excluded.value_sealed, updated_at = now()`,
            [account, JSON.stringify(writes)],
          );
        }
        if (deletes.length > 0) {
          await tx.query(
            `delete from whatsapp_keys k using jsonb_to_recordset($2::jsonb) as d(kind text, id text)
             where k.account = $1 and k.kind = d.kind and k.id = d.id`,
            [account, JSON.stringify(deletes)],
          );
        }
      });
    },
  };
}

function sessionOf(row: SessionRow): LinkedDeviceSession {
  return { status: row.status, phone: row.phone, codeSealed: row.qr_sealed, credentialsSealed: row.creds_sealed, updatedAt: row.updated_at };
}
