import { whatsappLinkSchema } from '@roster/api';
import { qrSvg, WhatsAppSessionStore } from '@roster/channel-whatsapp';
import type { RouteContext } from '../context.js';

/** The channels' own state beyond their configuration: WhatsApp's link, with its QR code while it waits for a scan. */
export function whatsappRoutes({ routes, database, config, key }: RouteContext): void {
  routes.add({
    method: 'GET',
    url: '/api/channels/whatsapp',
    summary: 'WhatsApp’s link: linked as a number, waiting for a scan (with the QR code to scan, as SVG), reconnecting, or logged out.',
    access: 'owner',
    response: {
      status: 200,
      schema: whatsappLinkSchema,
    },
    async handle() {
      const link = await new WhatsAppSessionStore(database, key).read();
      const relink = 'roster channel add whatsapp';
      const base = { enabled: config.channels.WHATSAPP_ENABLED === true, account: 'default', updatedAt: link?.updatedAt.toISOString() ?? null, phone: link?.phone ?? null };
      if (link === null) {
        return { ...base, status: 'not_linked' as const, qrSvg: null, detail: `Not linked yet: run ${relink}, or enable WhatsApp (WHATSAPP_ENABLED=true) and scan the code shown here.` };
      }
      switch (link.status) {
        case 'waiting_for_scan':
          return link.qr === null
            ? { ...base, status: link.status, qrSvg: null, detail: `No phone scanned the code in time: run ${relink}, or restart Roster for a new code.` }
            : { ...base, status: link.status, qrSvg: await qrSvg(link.qr), detail: 'On the phone: WhatsApp → Settings → Linked devices → Link a device, then scan this code.' };
        case 'linked':
          return { ...base, status: link.status, qrSvg: null, detail: `Linked as ${link.phone ?? 'an unknown number'}.` };
        case 'reconnecting':
          return { ...base, status: link.status, qrSvg: null, detail: 'The connection dropped; Roster is trying again.' };
        case 'logged_out':
          return { ...base, status: link.status, qrSvg: null, detail: `Logged out: the phone removed this device. Link it again with ${relink}.` };
      }
    },
  });
}
