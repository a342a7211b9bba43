import { api, segment, type ChannelLink, type ChannelStatus } from '../api.ts';
import { h, replace, time } from '../dom.ts';
import { badge } from '../ui.ts';

const labels: Record<ChannelLink['status'], string> = {
  not_linked: 'not linked',
  waiting_for_scan: 'waiting for a scan',
  linked: 'linked',
  reconnecting: 'reconnecting',
  logged_out: 'logged out',
};

/** While a code waits for a scan, it is read again this often (WhatsApp replaces its code about every 20 s). */
const refreshMs = 5000;

/**
 * A linked-device channel's link on the Channels screen (WhatsApp's): its
 * state, and while it waits for a scan, the code to scan with the phone. The
 * code is drawn from the SVG the server made, as an image (never parsed into
 * the page).
 */
export function channelLinkPanel(channel: ChannelStatus): HTMLElement {
  const title = `${channel.label} link`;
  const panel = h('div', { class: 'card channel-link', 'aria-live': 'polite', 'aria-label': title }, h('p', { class: 'hint' }, `Reading ${channel.label}’s link…`));
  let shown = false;

  async function show(): Promise<void> {
    // Leaving the screen detaches the panel: then it stops reading.
    if (shown && !panel.isConnected) return;
    shown = true;
    let link: ChannelLink;
    try {
      link = await api<ChannelLink>('GET', `/api/channels/${segment(channel.channel)}/link`);
    } catch (error) {
      replace(panel, h('p', { class: 'hint' }, `${channel.label}’s link could not be read: ${(error as Error).message}`));
      return;
    }
    replace(
      panel,
      h('div', { class: 'card-head' }, h('h3', null, title), badge(labels[link.status])),
      link.who === null ? null : h('p', null, link.status === 'logged_out' ? 'Was linked as ' : 'Linked as ', h('strong', null, link.who), '.'),
      link.codeSvg === null ? null : h('img', { class: 'qr', width: '264', height: '264', alt: `Code to scan with ${channel.label} on the phone`, src: `data:image/svg+xml;base64,${btoa(link.codeSvg)}` }),
      h('p', { class: 'hint' }, link.detail),
      link.configured ? null : h('p', { class: 'hint' }, `The gateway serves ${channel.label} once it is configured: ${link.setup}.`),
      link.updatedAt === null ? null : h('p', { class: 'hint' }, 'As of ', time(link.updatedAt), '.'),
    );
    // Keep the code current while it waits, as long as the panel is on the page.
    if (link.status === 'waiting_for_scan') window.setTimeout(() => void show(), refreshMs);
  }

  void show();
  return panel;
}
