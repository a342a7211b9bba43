import type { InstallationKey } from '@roster/config';
import type { LinkedDeviceStatus, LinkedDeviceStore } from '@roster/contracts';
import { RosterError } from '@roster/errors';
import { BufferJSON, initAuthCreds, proto, type AuthenticationCreds, type AuthenticationState, type SignalDataSet, type SignalDataTypeMap, type SignalKeyStore } from 'baileys';

/** A WhatsApp account's link, as the page and `roster doctor` show it. */
export interface WhatsAppLink {
  account: string;
  status: LinkedDeviceStatus;
  /** The linked number (`+4915…`), kept after a logout. */
  phone: string | null;
  /** The QR code's text while waiting for a scan. */
  qr: string | null;
  updatedAt: Date;
}

/** The purpose the installation key seals WhatsApp's authentication state under. */
const purpose = 'whatsapp-auth';

/**
 * One WhatsApp account's session, over the store its host keeps it in
 * (`LinkedDeviceStore`: Roster's database): the link state, and baileys'
 * authentication state (the device's credentials and its Signal keys). Each
 * value is serialised with baileys' `BufferJSON` and sealed with the
 * installation key under the account and the value's id before the store
 * sees it, so the store holds nothing readable, and a value copied to
 * another account, another id or another installation does not open.
 */
export class WhatsAppSession {
  constructor(
    private readonly store: LinkedDeviceStore,
    private readonly key: InstallationKey,
  ) {}

  get account(): string {
    return this.store.account;
  }

  private seal(context: string, value: unknown): string {
    return this.key.seal(purpose, JSON.stringify(value, BufferJSON.replacer), `${this.account}/${context}`);
  }

  private open<T>(context: string, sealed: string): T {
    return JSON.parse(this.key.open(purpose, sealed, `${this.account}/${context}`), BufferJSON.reviver) as T;
  }

  /** The link as stored, with its QR code opened; null when this account was never linked or shown a code. */
  async read(): Promise<WhatsAppLink | null> {
    const session = await this.store.read();
    if (session === null) return null;
    return {
      account: this.account,
      status: session.status,
      phone: session.phone,
      qr: session.codeSealed === null ? null : this.open<string>('qr', session.codeSealed),
      updatedAt: session.updatedAt,
    };
  }

  /** Whether the device is linked (credentials stored, not logged out). */
  async linked(): Promise<boolean> {
    const session = await this.store.read();
    return session !== null && session.credentialsSealed !== null && session.status !== 'logged_out';
  }

  /**
   * Baileys' authentication state over the store: the stored credentials
   * (or new ones, for a device not linked yet) and a key store that reads
   * and writes sealed keys. `saveCreds` stores the credentials once they
   * name an account (the device is linked); before that nothing is stored
   * but the QR code, so an abandoned pairing leaves no key behind.
   */
  async authState(): Promise<{ state: AuthenticationState; saveCreds: () => Promise<void>; linked: boolean }> {
    const session = await this.store.read();
    const stored = session !== null && session.credentialsSealed !== null && session.status !== 'logged_out';
    const creds: AuthenticationCreds = stored ? this.open<AuthenticationCreds>('creds', session.credentialsSealed!) : initAuthCreds();
    const keys: SignalKeyStore = {
      get: async <T extends keyof SignalDataTypeMap>(kind: T, ids: string[]) => {
        const found: { [id: string]: SignalDataTypeMap[T] } = {};
        if (ids.length === 0) return found;
        for (const [id, sealed] of await this.store.readKeys(kind, ids)) {
          let value = this.open<unknown>(`${kind}/${id}`, sealed);
          if (kind === 'app-state-sync-key' && value !== null) value = proto.Message.AppStateSyncKeyData.fromObject(value as Record<string, unknown>);
          found[id] = value as SignalDataTypeMap[T];
        }
        return found;
      },
      set: async (data: SignalDataSet) => {
        const changes: Array<{ kind: string; id: string; sealed: string | null }> = [];
        for (const [kind, values] of Object.entries(data)) {
          for (const [id, value] of Object.entries(values ?? {})) {
            changes.push({ kind, id, sealed: value === null || value === undefined ? null : this.seal(`${kind}/${id}`, value) });
          }
        }
        await this.store.writeKeys(changes);
      },
    };
    const saveCreds = async () => {
      if (creds.me?.id === undefined) return;
      await this.store.saveCredentials(phoneOf(creds.me.id), this.seal('creds', creds));
    };
    return { state: { creds, keys }, saveCreds, linked: stored };
  }

  /**
   * A new pairing begins: what a logged-out session left is deleted. Refused
   * (false) when another process linked the account meanwhile.
   */
  beginPairing(): Promise<boolean> {
    return this.store.beginPairing();
  }

  /** A QR code waits for a scan (only while the account is not linked); false when it is linked already. */
  showQr(qr: string): Promise<boolean> {
    return this.store.showCode(this.seal('qr', qr));
  }

  /** The connection came up (`linked`) or dropped and is being tried again (`reconnecting`). */
  setConnection(status: 'linked' | 'reconnecting'): Promise<void> {
    return this.store.setConnection(status);
  }

  /** The phone removed this device: the session is dead. Its keys and credentials go; the number stays, to say which to link again. */
  loggedOut(): Promise<void> {
    return this.store.loggedOut();
  }

  /** A pairing that ended without a scan: its QR code no longer works. */
  pairingEnded(): Promise<void> {
    return this.store.pairingEnded();
  }
}

/** `+4915123456789` from a jid (`4915123456789:12@s.whatsapp.net`). */
export function phoneOf(jid: string): string {
  const user = jid.split('@')[0]!.split(':')[0]!;
  if (!/^[0-9]{5,20}$/.test(user)) throw new RosterError('whatsapp_jid_invalid', 'WhatsApp named the linked account with an id that is not a phone number.');
  return `+${user}`;
}
