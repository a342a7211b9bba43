import type { ChannelLogger as Logger } from '@roster/contracts';
import { ChannelError, downloadFile, tooLargeText, type ChannelEvent, type ChannelTarget } from '@roster/channels';
import { maxFileBytes, type FileKind, type InboundFile } from '@roster/contracts';
import type { Attachment, ClientOptions, Message } from 'discord.js';

/** @discordjs/ws's manager of the gateway shards, as a sharding strategy receives it. */
export type GatewayManager = Parameters<NonNullable<NonNullable<ClientOptions['ws']>['buildStrategy']>>[0];

/** What a message is read against: the bot (once started), its account in Roster, the bound channels. */
export interface EventContext {
  bot: { id: string };
  account: string;
  boundChannels: ReadonlySet<string>;
}

/** A Discord channel as a conversation of this bot account (another account's channels are told apart by its name). */
export function conversationId(account: string, channelId: string): string {
  return account === 'default' ? channelId : `${account}:${channelId}`;
}

/** A gateway message as Roster's event; null when it is not for the bot (its own, another bot's, server chatter). */
export function toEvent(message: Message, { bot, account, boundChannels }: EventContext): ChannelEvent | null {
  if (message.author.bot || message.system || message.webhookId !== null) return null;
  const kind = message.guildId === null ? 'dm' : 'group';
  const mention = new RegExp(`<@!?${bot.id}>`, 'g');
  const botRole = message.guild?.roles.botRoleFor(bot.id)?.id;
  const mentionsBot = mention.test(message.content) || (botRole !== undefined && message.content.includes(`<@&${botRole}>`));
  const replyTo = message.reference?.messageId ?? null;
  const replyToBot = replyTo !== null && message.mentions.repliedUser?.id === bot.id;
  // In a bound channel every message is for the bot, as if it were mentioned.
  const bound = kind === 'group' && boundChannels.has(message.channelId);
  if (kind === 'group' && !mentionsBot && !replyToBot && !bound) return null;
  let text = message.content.replace(mention, ' ');
  if (botRole !== undefined) text = text.split(`<@&${botRole}>`).join(' ');
  text = text.replace(/[ \t]{2,}/g, ' ').trim();
  const attachments = [...message.attachments.values()];
  const media = attachments.map(mediaOf);
  const target: ChannelTarget = { chatId: message.channelId };
  if (kind === 'group') target.replyTo = message.id;
  else target.recipient = message.author.id;
  const displayName = message.author.globalName ?? message.author.username;
  return {
    inbound: {
      channel: 'discord',
      account,
      conversation: { externalId: conversationId(account, message.channelId), kind },
      sender: { externalId: message.author.id, ...(displayName === '' ? {} : { displayName }) },
      externalMessageId: message.id,
      text,
    },
    mentionsBot: mentionsBot || bound,
    replyTo,
    replyToBot,
    media,
    ...(attachments.length === 0 ? {} : { fetchFiles: (signal: AbortSignal) => fetchFiles(attachments, media, signal) }),
    target,
    // A message id is unique on Discord: the same message delivered again (after a resume) is the same delivery.
    deliveryId: `message:${message.id}`,
  };
}

/**
 * The attachments of a message, from Discord's CDN (their addresses are
 * signed; no token goes with them), each at most `maxFileBytes`: one
 * Discord announced larger is refused before anything is fetched. Videos
 * are skipped.
 */
async function fetchFiles(attachments: readonly Attachment[], media: ChannelEvent['media'], signal: AbortSignal) {
  const files: InboundFile[] = [];
  const skipped: ChannelEvent['media'] = [];
  for (const [index, attachment] of attachments.entries()) {
    if (media[index] === 'video') {
      skipped.push('video');
      continue;
    }
    const mediaType = attachment.contentType?.split(';')[0]?.trim() || 'application/octet-stream';
    const kind: FileKind = mediaType.startsWith('image/') ? 'image' : mediaType.startsWith('audio/') ? 'audio' : 'file';
    if (attachment.size > maxFileBytes) throw new ChannelError('failed', tooLargeText(kind));
    const data = await downloadFile(attachment.url, { kind, platform: 'Discord', signal });
    files.push({ kind, mediaType, data, ...(attachment.name === '' ? {} : { name: attachment.name }) });
  }
  return { files, skipped };
}

function mediaOf(attachment: Attachment): ChannelEvent['media'][number] {
  const type = attachment.contentType ?? '';
  if (type.startsWith('image/')) return 'image';
  // A voice message is an audio attachment flagged as one (with a waveform).
  if (type.startsWith('audio/')) return attachment.waveform !== null || attachment.duration !== null ? 'voice' : 'audio';
  if (type.startsWith('video/')) return 'video';
  return 'file';
}

/**
 * discord.js hands every gateway event to its handlers as it came, without
 * checking its shape: one malformed event (a message without an author, an
 * interaction without data) throws out of them, and an exception thrown
 * there takes the whole process down. The shards' events pass through this
 * before they reach discord.js: an event its handlers cannot read is dropped
 * with a warning (its type and the error's name, never its content), and the
 * connection goes on.
 */
export function guardDispatch(manager: GatewayManager, log: Logger | undefined): GatewayManager {
  const emit = (event: string, payload: { data?: { t?: unknown } }): boolean => {
    try {
      return (manager.emit as (name: string, ...args: unknown[]) => boolean).call(manager, event, payload);
    } catch (error) {
      // Only a platform event is dropped; anything else is the library's own and goes on as it was.
      if (event !== 'dispatch') throw error;
      log?.warn({ event: typeof payload.data?.t === 'string' ? payload.data.t.slice(0, 40) : null, err: { name: error instanceof Error ? error.name : 'Error' } }, 'a gateway event Discord sent could not be read and was dropped');
      return false;
    }
  };
  return new Proxy(manager, {
    get(target, property) {
      if (property === 'emit') return emit;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

