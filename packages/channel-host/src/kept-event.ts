import type { ChannelEvent } from '@roster/contracts';

/** A message as the inbox keeps it: everything but the means to fetch its files, which do not outlive the process. */
export function storable(event: ChannelEvent): Record<string, unknown> {
  const { fetchFiles: _fetch, ...kept } = event;
  return kept as unknown as Record<string, unknown>;
}

const filesNotKept = 'the files of a message taken before a restart are not kept';

/** A kept message as it was taken; its files, if any, are asked for again. Null for a row this version cannot read. */
export function restored(kept: Record<string, unknown>): ChannelEvent | null {
  const event = kept as unknown as ChannelEvent;
  if (typeof event.deliveryId !== 'string' || typeof event.inbound !== 'object' || typeof event.target !== 'object' || !Array.isArray(event.media)) return null;
  if (event.media.length === 0) return event;
  return { ...event, fetchFiles: () => Promise.reject(new Error(filesNotKept)) };
}

/** In a group, only what is for the bot: a mention, a reply to it, a command. */
export function forTheBot(event: ChannelEvent): boolean {
  return event.inbound.conversation.kind !== 'group' || event.mentionsBot || event.replyToBot || event.inbound.text.trimStart().startsWith('/');
}
