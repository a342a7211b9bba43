import type { InstallationKey } from '@roster/config';
import type { LinkedDeviceStore, ChannelLogger as Logger } from '@roster/contracts';
import { RosterError } from '@roster/errors';
import { WhatsAppConnection, type WhatsAppSocketFactory } from './connection.js';
import { phoneOf, WhatsAppSession } from './session.js';

export interface LinkWhatsAppOptions {
  /** Where the account's session is kept (the host's), sealed with `key`. */
  store: LinkedDeviceStore;
  key: InstallationKey;
  logger?: Logger;
  socketFactory?: WhatsAppSocketFactory;
  /** Each QR code to show, as it comes (about every 20 s until one is scanned). */
  onQr(qr: string): void | Promise<void>;
  /** Stops waiting (Ctrl+C). */
  signal?: AbortSignal;
}

/**
 * Link a WhatsApp account as a device of Roster: show QR codes until a phone
 * scans one (WhatsApp → Linked devices → Link a device), then wait for the
 * connection and store the session. An account linked already is left as
 * it is. Resolves to the linked number.
 */
export async function linkWhatsApp(options: LinkWhatsAppOptions): Promise<{ phone: string; already: boolean }> {
  const store = new WhatsAppSession(options.store, options.key);
  if (await store.linked()) {
    const link = await store.read();
    return { phone: link?.phone ?? 'an unknown number', already: true };
  }
  let connection: WhatsAppConnection | undefined;
  const outcome = new Promise<string>((resolve, reject) => {
    const fail = (code: string, message: string) => reject(new RosterError(code, message));
    connection = new WhatsAppConnection(
      { store, ...(options.socketFactory === undefined ? {} : { socketFactory: options.socketFactory }), ...(options.logger === undefined ? {} : { logger: options.logger }) },
      {
        onQr: (qr) => void Promise.resolve(options.onQr(qr)).catch(reject),
        onOpen: (user) => resolve(phoneOf(user.id)),
        onLoggedOut: () => fail('whatsapp_logged_out', 'WhatsApp refused the link (the phone logged this device out): try again.'),
        onPairingExpired: () => fail('whatsapp_link_expired', 'No phone scanned the QR code in time: run roster channel add whatsapp again.'),
      },
    );
    options.signal?.addEventListener('abort', () => fail('whatsapp_link_cancelled', 'Linking WhatsApp was stopped; nothing was linked.'), { once: true });
  });
  try {
    await connection!.start();
    const phone = await outcome;
    return { phone, already: false };
  } finally {
    await connection!.stop();
  }
}
