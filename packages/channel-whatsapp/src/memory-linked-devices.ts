/**
 * Linked-device sessions in memory, for this package's tests: the
 * `LinkedDeviceStore` the host gives the plugin (in Postgres,
 * `createLinkedDeviceStore` of `@roster/gateway`), step for step; both run
 * `describeLinkedDeviceStoreConformance`. Each step changes the maps before
 * it yields, so it is as atomic as the host's transaction. Test-only.
 */
import type { LinkedDeviceSession, LinkedDeviceStore } from '@roster/contracts';

const linked = (session: LinkedDeviceSession) => session.credentialsSealed !== null && session.status !== 'logged_out';

export class MemoryLinkedDevices {
  /** Each account's session, as the store holds it: what a test reads to see what the plugin handed over. */
  readonly sessions = new Map<string, LinkedDeviceSession>();
  /** Each account's keys, by `kind/id`. */
  readonly keys = new Map<string, Map<string, string>>();

  /** The store of one account. */
  store(account = 'default'): LinkedDeviceStore {
    const { sessions } = this;
    const keysOf = () => {
      let keys = this.keys.get(account);
      if (keys === undefined) this.keys.set(account, (keys = new Map()));
      return keys;
    };
    const change = (session: LinkedDeviceSession, values: Partial<LinkedDeviceSession>) => sessions.set(account, { ...session, ...values, updatedAt: new Date() });

    return {
      account,

      async read() {
        const session = sessions.get(account);
        return session === undefined ? null : { ...session };
      },

      async beginPairing() {
        const session = sessions.get(account);
        if (session !== undefined && linked(session)) return false;
        keysOf().clear();
        if (session !== undefined) sessions.set(account, { ...session, credentialsSealed: null });
        return true;
      },

      async showCode(codeSealed) {
        const session = sessions.get(account);
        if (session === undefined) {
          sessions.set(account, { status: 'waiting_for_scan', phone: null, codeSealed, credentialsSealed: null, updatedAt: new Date() });
          return true;
        }
        if (linked(session)) return false;
        change(session, { status: 'waiting_for_scan', codeSealed });
        return true;
      },

      async saveCredentials(phone, credentialsSealed) {
        const session = sessions.get(account);
        if (session === undefined) {
          sessions.set(account, { status: 'linked', phone, codeSealed: null, credentialsSealed, updatedAt: new Date() });
          return;
        }
        const status = session.status === 'waiting_for_scan' || session.status === 'logged_out' ? 'linked' : session.status;
        change(session, { status, phone, codeSealed: null, credentialsSealed });
      },

      async setConnection(status) {
        const session = sessions.get(account);
        if (session !== undefined && linked(session)) change(session, { status });
      },

      async pairingEnded() {
        const session = sessions.get(account);
        if (session?.status === 'waiting_for_scan') change(session, { codeSealed: null });
      },

      async loggedOut() {
        keysOf().clear();
        const session = sessions.get(account);
        if (session === undefined) sessions.set(account, { status: 'logged_out', phone: null, codeSealed: null, credentialsSealed: null, updatedAt: new Date() });
        else change(session, { status: 'logged_out', codeSealed: null, credentialsSealed: null });
      },

      async readKeys(kind, ids) {
        const keys = keysOf();
        const found = new Map<string, string>();
        for (const id of ids) {
          const sealed = keys.get(`${kind}/${id}`);
          if (sealed !== undefined) found.set(id, sealed);
        }
        return found;
      },

      async writeKeys(changes) {
        const keys = keysOf();
        for (const { kind, id, sealed } of changes) {
          if (sealed === null) keys.delete(`${kind}/${id}`);
          else keys.set(`${kind}/${id}`, sealed);
        }
      },
    };
  }
}
