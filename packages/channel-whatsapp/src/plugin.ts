import { defineChannelPlugin, flag, type ChannelCheck, type ChannelHost } from '@roster/contracts';
import type { InstallationKey } from '@roster/config';
import type { Database } from '@roster/db';
import type { WhatsAppSocketFactory } from './connection.js';

const relink = 'roster channel add whatsapp';

/** What the host must offer: the session lives in Roster's database, sealed with the installation key. */
function services(host: ChannelHost): { database: Database; key: InstallationKey; socketFactory?: WhatsAppSocketFactory } {
  const { database, key, whatsappSocketFactory } = host.services as { database?: Database; key?: InstallationKey; whatsappSocketFactory?: WhatsAppSocketFactory };
  if (database === undefined || key === undefined) throw new Error('WhatsApp keeps its linked device in the database: this process has none open.');
  return { database, key, ...(whatsappSocketFactory === undefined ? {} : { socketFactory: whatsappSocketFactory }) };
}

/** WhatsApp: Roster as a linked device of a WhatsApp account, its session in the database. */
export const channelPlugin = defineChannelPlugin<{ account: string }>({
  name: 'whatsapp',
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
      const { database, key, socketFactory } = services(host);
      let shown = 0;
      const link = await linkWhatsApp({
        database,
        key,
        logger: host.logger,
        account,
        signal,
        ...(socketFactory === undefined ? {} : { socketFactory }),
        onQr: async (qr) => onCode(await qrText(qr), shown++),
      });
      return { already: link.already, who: link.phone };
    },
    async state(host, { account }) {
      const { WhatsAppSessionStore } = await import('./session-store.js');
      const { qrSvg } = await import('./qr.js');
      const { database, key } = services(host);
      const link = await new WhatsAppSessionStore(database, key, account).read();
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
  async create(_settings, host) {
    const { createWhatsAppAdapter } = await import('./whatsapp-adapter.js');
    const { database, key, socketFactory } = services(host);
    return createWhatsAppAdapter({ database, key, logger: host.logger, ...(socketFactory === undefined ? {} : { socketFactory }) });
  },
  async check(_settings, host): Promise<ChannelCheck> {
    const { readWhatsAppLink } = await import('./session-store.js');
    const database = (host.services as { database?: Database }).database;
    if (database === undefined) return { status: 'fail', detail: 'its link is kept in the database, which could not be opened' };
    let link: Awaited<ReturnType<typeof readWhatsAppLink>>;
    try {
      link = await readWhatsAppLink(database);
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
          detail: link.waitingQr ? `waiting for a scan: scan the QR code on the Channels page, or run ${relink}` : `not linked: no phone scanned the QR code in time; run ${relink}`,
        };
      case 'logged_out':
        return { status: 'fail', detail: `logged out${link.phone === null ? '' : ` (was ${link.phone})`}: the phone removed this device; re-link with ${relink}` };
    }
  },
});
