/**
 * Where a linked device's link stands: `waiting_for_scan` (a code is shown
 * for a phone to scan), `linked` (paired; the connection may still be
 * coming up), `reconnecting` (the connection dropped and is being tried
 * again), `logged_out` (the phone removed the device: it must be linked
 * again).
 */
export type LinkedDeviceStatus = 'waiting_for_scan' | 'linked' | 'reconnecting' | 'logged_out';

/**
 * A linked device's session as its store keeps it. The sealed values are
 * the plugin's: it seals them with the installation key before they reach
 * the store, which never opens them.
 */
export interface LinkedDeviceSession {
  status: LinkedDeviceStatus;
  /** The linked number (`+4915…`), kept after a logout so that the owner knows which to link again. */
  phone: string | null;
  /** The code waiting for a scan, sealed (it carries the pairing secret); null once linked, or once the pairing ended. */
  codeSealed: string | null;
  /** The device's credentials, sealed; null until linked, and after a logout. */
  credentialsSealed: string | null;
  updatedAt: Date;
}

/** One key of the device (a Signal pre-key, session, sender key…) to store, sealed, or to delete (`sealed: null`). */
export interface LinkedDeviceKeyChange {
  /** The kind of key (`pre-key`, `session`, `app-state-sync-key`…): lower-case letters and hyphens. */
  kind: string;
  id: string;
  sealed: string | null;
}

/**
 * The durable state of one account's linked device (WhatsApp's), kept by
 * the host for the channel's plugin: the link and the device's keys. The
 * plugin hands over only sealed values, so the store holds nothing it could
 * read or log. Each method is one atomic step, since a gateway,
 * `roster channel add` and the server may use one account's session at
 * once: a pairing is refused or a code not shown while another process
 * holds a link, rather than overwriting it.
 */
export interface LinkedDeviceStore {
  /** The account whose device this is: part of the context each value is sealed under. */
  readonly account: string;
  /** The session; null when nothing was stored for the account (or the host has no place for it yet: not migrated). */
  read(): Promise<LinkedDeviceSession | null>;
  /**
   * A new pairing begins: the keys and credentials a logged-out or
   * abandoned session left are deleted. Refused (false, nothing changed)
   * while the device is linked (credentials stored, not logged out): another
   * process linked it meanwhile.
   */
  beginPairing(): Promise<boolean>;
  /** A code waits for a scan (`waiting_for_scan`). Refused (false, nothing changed) while the device is linked. */
  showCode(codeSealed: string): Promise<boolean>;
  /**
   * The device is paired as `phone`: its credentials are stored (replacing
   * those stored before) and the code dropped. A session waiting for a scan
   * or logged out becomes `linked`; a linked or reconnecting one keeps its
   * status.
   */
  saveCredentials(phone: string, credentialsSealed: string): Promise<void>;
  /** The connection of a linked device came up, or dropped; nothing changes for a device that is not linked. */
  setConnection(status: 'linked' | 'reconnecting'): Promise<void>;
  /** A pairing ended without a scan: its code (while still `waiting_for_scan`) no longer works. */
  pairingEnded(): Promise<void>;
  /** The phone removed the device: `logged_out`; its keys, credentials and code go, its number stays. */
  loggedOut(): Promise<void>;
  /** The sealed keys of one kind among `ids`, by id; an id with no key is absent. */
  readKeys(kind: string, ids: readonly string[]): Promise<Map<string, string>>;
  /** Store and delete keys: all of the changes, or none. */
  writeKeys(changes: readonly LinkedDeviceKeyChange[]): Promise<void>;
}
