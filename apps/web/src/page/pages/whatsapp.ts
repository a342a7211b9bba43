import { api, type WhatsAppLink } from '../api.ts';
import { h, replace, time } from '../dom.ts';
import { badge } from '../ui.ts';

const labels: Record<WhatsAppLink['status'], string> = {
  not_linked: 'not linked',
  waiting_for_scan: 'waiting for a scan',
  linked: 'linked',
  reconnecting: 'reconnecting',
  logged_out: 'logged out',
};

/** While a code waits for a scan, it is read again this often (WhatsApp replaces it about every 20 s). */
const refreshMs = 5000;

/**
 * WhatsApp's link on the Channels screen: its state, and while it waits for
 * a scan, the QR code to scan with the phone. The code is drawn from the
 * SVG the server made, as an image (never parsed into the page).
 */
export function whatsappPanel(): HTMLElement {
  const panel = h('div', { class: 'card whatsapp-link', 'aria-live': 'polite', 'aria-label': 'WhatsApp link' }, h('p', { class: 'hint' }, 'Reading WhatsApp’s link…'));
  let shown = false;

  async function show(): Promise<void> {
    // Leaving the screen detaches the panel: then it stops reading.
    if (shown && !panel.isConnected) return;
    shown = true;
    let link: WhatsAppLink;
    try {
      link = await api<WhatsAppLink>('GET', '/api/channels/whatsapp');
    } catch (error) {
      replace(panel, h('p', { class: 'hint' }, `WhatsApp’s link could not be read: ${(error as Error).message}`));
      return;
    }
    replace(
      panel,
      h('div', { class: 'card-head' }, h('h3', null, 'WhatsApp link'), badge(labels[link.status])),
      link.phone === null ? null : h('p', null, link.status === 'logged_out' ? 'Was linked as ' : 'Linked as ', h('strong', null, link.phone), '.'),
      link.qrSvg === null ? null : h('img', { class: 'qr', width: '264', height: '264', alt: 'QR code to scan with WhatsApp on the phone', src: `data:image/svg+xml;base64,${btoa(link.qrSvg)}` }),
      h('p', { class: 'hint' }, link.detail),
      link.enabled ? null : h('p', { class: 'hint' }, 'The gateway serves WhatsApp once WHATSAPP_ENABLED=true.'),
      link.updatedAt === null ? null : h('p', { class: 'hint' }, 'As of ', time(link.updatedAt), '.'),
    );
    // Keep the code current while it waits, as long as the panel is on the page.
    if (link.status === 'waiting_for_scan') window.setTimeout(() => void show(), refreshMs);
  }

  void show();
  return panel;
}
