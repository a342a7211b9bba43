import { defineChannelPlugin, flag, type ChannelCheck, type ChannelHost, type LinkedDeviceStore } from '@roster/contracts';
import type { InstallationKey } from '@roster/config';
import type { WhatsAppSocketFactory } from './connection.js';

const name = 'whatsapp';
const relink = 'roster channel add whatsapp';

/** What the host must offer: the session lives in Roster's database (the host's linked-device store), sealed with the installation key. */
function services(host: ChannelHost, account: string): { store: LinkedDeviceStore; key: InstallationKey; socketFactory?: WhatsAppSocketFactory } {
  const { key, whatsappSocketFactory } = host.services as { key?: InstallationKey; whatsappSocketFactory?: WhatsAppSocketFactory };
  const store = host.linkedDevice?.(name, account);
  if (store === undefined || key === undefined) throw new Error('WhatsApp keeps its linked device in the database: this process has none open.');
  return { store, key, ...(whatsappSocketFactory === undefined ? {} : { socketFactory: whatsappSocketFactory }) };
}

/** WhatsApp: Roster as a linked device of a WhatsApp account, its session in the database. */
export const channelPlugin = defineChannelPlugin<{ account: string }>({
  name,
  label: 'WhatsApp',
  summary: 'a phone that scans a QR code (Roster becomes a linked device), and WHATSAPP_ENABLED',
  environment: {
    WHATSAPP_ENABLED: {
      schema: flag(),
      example: 'true',
      description:
        'Serve WhatsApp as a linked device of a WhatsApp account (link it with roster channel add whatsapp; its session lives in the database, sealed with the installation key).',
    },
  },
  credentials: {},
  link: {
    skipOption: 'bind-only',
    instructions: 'On the phone: WhatsApp → Settings → Linked devices → Link a device, then scan this code (a new one comes every 20 seconds):',
    async run(host, { account, signal, onCode }) {
      const { linkWhatsApp } = await import('./link.js');
      const { qrText } = await import('./qr.js');
      const { store, key, socketFactory } = services(host, account);
      let shown = 0;
      const link = await linkWhatsApp({
        store,
        key,
        logger: host.logger,
        signal,
        ...(socketFactory === undefined ? {} : { socketFactory }),
        onQr: async (qr) => onCode(await qrText(qr), shown++),
      });
      return { already: link.already, who: link.phone };
    },
    async state(host, { account }) {
      const { WhatsAppSession } = await import('./session.js');
      const { qrSvg } = await import('./qr.js');
      const { store, key } = services(host, account);
      const link = await new WhatsAppSession(store, key).read();
      if (link === null) {
        return { status: 'not_linked', who: null, codeSvg: null, updatedAt: null, detail: `Not linked yet: run ${relink}, or enable WhatsApp (WHATSAPP_ENABLED=true) and scan the code shown here.` };
      }
      const base = { who: link.phone, updatedAt: link.updatedAt, codeSvg: null };
      switch (link.status) {
        case 'waiting_for_scan':
          return link.qr === null
            ? { ...base, status: link.status, detail: `No phone scanned the code in time: run ${relink}, or restart Roster for a new code.` }
            : { ...base, status: link.status, codeSvg: await qrSvg(link.qr), detail: 'On the phone: WhatsApp → Settings → Linked devices → Link a device, then scan this code.' };
        case 'linked':
          return { ...base, status: link.status, detail: `Linked as ${link.phone ?? 'an unknown number'}.` };
        case 'reconnecting':
          return { ...base, status: link.status, detail: 'The connection dropped; Roster is trying again.' };
        case 'logged_out':
          return { ...base, status: link.status, detail: `Logged out: the phone removed this device. Link it again with ${relink}.` };
      }
    },
  },
  setup({ environment }) {
    if (environment.WHATSAPP_ENABLED !== true) return { state: 'off', detail: 'not configured (set WHATSAPP_ENABLED)' };
    return { state: 'configured', settings: { account: 'default' } };
  },
  async create(settings, host) {
    const { createWhatsAppAdapter } = await import('./whatsapp-adapter.js');
    const { store, key, socketFactory } = services(host, settings.account);
    return createWhatsAppAdapter({ store, key, logger: host.logger, ...(socketFactory === undefined ? {} : { socketFactory }) });
  },
  async check(settings, host): Promise<ChannelCheck> {
    // The link as stored, without the installation key: nothing sealed is opened.
    const store = host.linkedDevice?.(name, settings.account);
    if (store === undefined) return { status: 'fail', detail: 'its link is kept in the database, which could not be opened' };
    let link: Awaited<ReturnType<LinkedDeviceStore['read']>>;
    try {
      link = await store.read();
    } catch (error) {
      return { status: 'fail', detail: `its link could not be read: ${(error as Error).message}` };
    }
    if (link === null) return { status: 'fail', detail: `not linked yet: run ${relink} and scan the QR code with the phone (WhatsApp → Linked devices)` };
    switch (link.status) {
      case 'linked':
        return { status: 'ok', detail: `linked as ${link.phone ?? 'an unknown number'}` };
      case 'reconnecting':
        return { status: 'ok', detail: `linked as ${link.phone ?? 'an unknown number'}; the connection dropped and is being tried again (since ${link.updatedAt.toISOString()})` };
      case 'waiting_for_scan':
        return {
          status: 'fail',
          detail: link.codeSealed !== null ? `waiting for a scan: scan the QR code on the Channels page, or run ${relink}` : `not linked: no phone scanned the QR code in time; run ${relink}`,
        };
      case 'logged_out':
        return { status: 'fail', detail: `logged out${link.phone === null ? '' : ` (was ${link.phone})`}: the phone removed this device; re-link with ${relink}` };
    }
  },
});
