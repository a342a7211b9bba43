import type { InstallationKey } from '@roster/config';
import type { Database, Transaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { BufferJSON, initAuthCreds, proto, type AuthenticationCreds, type AuthenticationState, type SignalDataSet, type SignalDataTypeMap, type SignalKeyStore } from 'baileys';

/** Where a WhatsApp account's link stands. */
export type WhatsAppLinkStatus = 'waiting_for_scan' | 'linked' | 'reconnecting' | 'logged_out';

/** A WhatsApp account's link, as the page and `roster doctor` show it. */
export interface WhatsAppLink {
  account: string;
  status: WhatsAppLinkStatus;
  /** The linked number (`+4915…`), kept after a logout. */
  phone: string | null;
  /** The QR code's text while waiting for a scan (only when read with the installation key). */
  qr: string | null;
  updatedAt: Date;
}

/** The purpose the installation key seals WhatsApp's authentication state under. */
const purpose = 'whatsapp-auth';

interface SessionRow {
  account: string;
  status: WhatsAppLinkStatus;
  phone: string | null;
  qr_sealed: string | null;
  creds_sealed: string | null;
  updated_at: Date;
}

/**
 * One WhatsApp account's session in Postgres: the link state, and baileys'
 * authentication state (the device's credentials and its Signal keys), each
 * value sealed with the installation key under the account and the value's
 * id, so a row copied to another account, another id or another
 * installation does not open. Every statement runs as roster_ops.
 */
export class WhatsAppSessionStore {
  constructor(
    private readonly database: Database,
    private readonly key: InstallationKey,
    readonly account = 'default',
  ) {}

  private run<T>(what: string, fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.database.adminScope(`whatsapp: ${what}`, fn);
  }

  private seal(context: string, value: unknown): string {
    return this.key.seal(purpose, JSON.stringify(value, BufferJSON.replacer), `${this.account}/${context}`);
  }

  private open<T>(context: string, sealed: string): T {
    return JSON.parse(this.key.open(purpose, sealed, `${this.account}/${context}`), BufferJSON.reviver) as T;
  }

  /** The link as stored, with its QR code opened; null when this account was never linked or shown a code. */
  async read(): Promise<WhatsAppLink | null> {
    const row = await this.row();
    if (row === null) return null;
    return { ...showRow(row), qr: row.qr_sealed === null ? null : this.open<string>('qr', row.qr_sealed) };
  }

  private async row(): Promise<SessionRow | null> {
    return this.run('read the link', async (tx) => (await tx.query<SessionRow>('select * from whatsapp_sessions where account = $1', [this.account])).rows[0] ?? null);
  }

  /** Whether the device is linked (credentials stored, not logged out). */
  async linked(): Promise<boolean> {
    const row = await this.row();
    return row !== null && row.creds_sealed !== null && row.status !== 'logged_out';
  }

  /**
   * Baileys' authentication state over the database: the stored credentials
   * (or new ones, for a device not linked yet) and a key store that reads
   * and writes sealed rows. `saveCreds` stores the credentials once they
   * name an account (the device is linked); before that nothing is stored
   * but the QR code, so an abandoned pairing leaves no key behind.
   */
  async authState(): Promise<{ state: AuthenticationState; saveCreds: () => Promise<void>; linked: boolean }> {
    const row = await this.row();
    const stored = row !== null && row.creds_sealed !== null && row.status !== 'logged_out';
    const creds: AuthenticationCreds = stored ? this.open<AuthenticationCreds>('creds', row.creds_sealed!) : initAuthCreds();
    const keys: SignalKeyStore = {
      get: async <T extends keyof SignalDataTypeMap>(kind: T, ids: string[]) => {
        const found: { [id: string]: SignalDataTypeMap[T] } = {};
        if (ids.length === 0) return found;
        const rows = await this.run('read signal keys', async (tx) =>
          (await tx.query<{ id: string; value_sealed: string }>('select id, value_sealed from whatsapp_keys where account = $1 and kind = $2 and id = any($3::text[])', [this.account, kind, ids])).rows,
        );
        for (const { id, value_sealed } of rows) {
          let value = this.open<unknown>(`${kind}/${id}`, value_sealed);
          if (kind === 'app-state-sync-key' && value !== null) value = proto.Message.AppStateSyncKeyData.fromObject(value as Record<string, unknown>);
          found[id] = value as SignalDataTypeMap[T];
        }
        return found;
      },
      set: async (data: SignalDataSet) => {
        const writes: Array<{ kind: string; id: string; sealed: string }> = [];
        const deletes: Array<{ kind: string; id: string }> = [];
        for (const [kind, values] of Object.entries(data)) {
          for (const [id, value] of Object.entries(values ?? {})) {
            if (value === null || value === undefined) deletes.push({ kind, id });
            else writes.push({ kind, id, sealed: this.seal(`${kind}/${id}`, value) });
          }
        }
        if (writes.length === 0 && deletes.length === 0) return;
        await this.run('write signal keys', async (tx) => {
          if (writes.length > 0) {
            await tx.query(
              `insert into whatsapp_keys (account, kind, id, value_sealed)
               select $1, w.kind, w.id, w.sealed from jsonb_to_recordset($2::jsonb) as w(kind text, id text, sealed text)
               on conflict (account, kind, id) do update set value_sealed = excluded.value_sealed, updated_at = now()`,
              [this.account, JSON.stringify(writes)],
            );
          }
          if (deletes.length > 0) {
            await tx.query(
              `delete from whatsapp_keys k using jsonb_to_recordset($2::jsonb) as d(kind text, id text)
               where k.account = $1 and k.kind = d.kind and k.id = d.id`,
              [this.account, JSON.stringify(deletes)],
            );
          }
        });
      },
      clear: async () => {
        await this.run('clear signal keys', (tx) => tx.query('delete from whatsapp_keys where account = $1', [this.account]));
      },
    };
    const saveCreds = async () => {
      if (creds.me?.id === undefined) return;
      const phone = phoneOf(creds.me.id);
      await this.run('store the credentials', (tx) =>
        tx.query(
          `insert into whatsapp_sessions (account, status, phone, creds_sealed, linked_at) values ($1, 'linked', $2, $3, now())
           on conflict (account) do update set creds_sealed = excluded.creds_sealed, phone = excluded.phone, qr_sealed = null,
             status = case when whatsapp_sessions.status in ('waiting_for_scan', 'logged_out') then 'linked' else whatsapp_sessions.status end,
             linked_at = case when whatsapp_sessions.creds_sealed is null or whatsapp_sessions.status = 'logged_out' then now() else whatsapp_sessions.linked_at end,
             updated_at = now()`,
          [this.account, phone, this.seal('creds', creds)],
        ),
      );
    };
    return { state: { creds, keys }, saveCreds, linked: stored };
  }

  /**
   * A new pairing begins: what a logged-out session left is deleted. Refused
   * (false) when another process linked the account meanwhile.
   */
  async beginPairing(): Promise<boolean> {
    return this.run('begin pairing', async (tx) => {
      const { rows } = await tx.query<{ status: string; creds: boolean }>('select status, creds_sealed is not null as creds from whatsapp_sessions where account = $1 for update', [this.account]);
      if (rows[0] !== undefined && rows[0].creds && rows[0].status !== 'logged_out') return false;
      await tx.query('delete from whatsapp_keys where account = $1', [this.account]);
      await tx.query('update whatsapp_sessions set creds_sealed = null where account = $1', [this.account]);
      return true;
    });
  }

  /** A QR code waits for a scan (only while the account is not linked); false when it is linked already. */
  async showQr(qr: string): Promise<boolean> {
    return this.run('show a QR code', async (tx) => {
      const { rowCount } = await tx.query(
        `insert into whatsapp_sessions (account, status, qr_sealed) values ($1, 'waiting_for_scan', $2)
         on conflict (account) do update set status = 'waiting_for_scan', qr_sealed = excluded.qr_sealed, updated_at = now()
         where whatsapp_sessions.creds_sealed is null or whatsapp_sessions.status = 'logged_out'`,
        [this.account, this.seal('qr', qr)],
      );
      return rowCount === 1;
    });
  }

  /** The connection came up (`linked`) or dropped and is being tried again (`reconnecting`). */
  async setConnection(status: 'linked' | 'reconnecting'): Promise<void> {
    await this.run('record the connection', (tx) =>
      tx.query(`update whatsapp_sessions set status = $2, updated_at = now() where account = $1 and creds_sealed is not null and status <> 'logged_out'`, [this.account, status]),
    );
  }

  /** The phone removed this device: the session is dead. Its keys and credentials go; the number stays, to say which to link again. */
  async loggedOut(): Promise<void> {
    await this.run('record a logout', async (tx) => {
      await tx.query('delete from whatsapp_keys where account = $1', [this.account]);
      await tx.query(
        `insert into whatsapp_sessions (account, status) values ($1, 'logged_out')
         on conflict (account) do update set status = 'logged_out', creds_sealed = null, qr_sealed = null, updated_at = now()`,
        [this.account],
      );
    });
  }

  /** A pairing that ended without a scan: its QR code no longer works. */
  async pairingEnded(): Promise<void> {
    await this.run('end a pairing', (tx) => tx.query(`update whatsapp_sessions set qr_sealed = null, updated_at = now() where account = $1 and status = 'waiting_for_scan'`, [this.account]));
  }
}

/**
 * The link of a WhatsApp account as stored, without opening anything (no
 * installation key needed): for `roster doctor`. Null when there is none, or
 * when the database has no such table yet (not migrated).
 */
export async function readWhatsAppLink(database: Database, account = 'default'): Promise<Omit<WhatsAppLink, 'qr'> & { waitingQr: boolean } | null> {
  return database.adminScope('whatsapp: read the link for a check', async (tx) => {
    const exists = await tx.query<{ exists: boolean }>(`select to_regclass('whatsapp_sessions') is not null as exists`);
    if (exists.rows[0]?.exists !== true) return null;
    const row = (await tx.query<SessionRow>('select * from whatsapp_sessions where account = $1', [account])).rows[0];
    return row === undefined ? null : { ...showRow(row), waitingQr: row.qr_sealed !== null };
  });
}

function showRow(row: SessionRow): Omit<WhatsAppLink, 'qr'> {
  return { account: row.account, status: row.status, phone: row.phone, updatedAt: row.updated_at };
}

/** `+4915123456789` from a jid (`4915123456789:12@s.whatsapp.net`). */
export function phoneOf(jid: string): string {
  const user = jid.split('@')[0]!.split(':')[0]!;
  if (!/^[0-9]{5,20}$/.test(user)) throw new RosterError('whatsapp_jid_invalid', 'WhatsApp named the linked account with an id that is not a phone number.');
  return `+${user}`;
}
