/** Updates as Telegram shapes them: the bot, the group, people and chats, and a message with its files. Test-only. */
import { fakePicture, type PlatformMessage, type PlatformUser } from '@roster/channels/testing';

export const fakeBot = { id: 999_000, is_bot: true, first_name: 'Roster', username: 'roster_test_bot', can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false };
export const groupChat = { id: -1_001_234_567_890, type: 'supergroup', title: 'The team' };

/** Keeps a file's bytes for getFile and download; returns the fields Telegram gives a file. */
export type KeepFile = (data: Uint8Array, extension: string) => { file_id: string; file_unique_id: string; file_size: number };

export const userOf = (user: PlatformUser) => ({ id: Number(user.id), is_bot: false, first_name: user.name.split(' ')[0], last_name: user.name.split(' ').slice(1).join(' ') || undefined });
const chatOf = (kind: 'dm' | 'group', user: PlatformUser) => (kind === 'dm' ? { id: Number(user.id), type: 'private', first_name: user.name } : groupChat);

/** The update Telegram sends for `message`, with its files kept by `keepFile` for download. */
export function messageUpdate(
  message: PlatformMessage & { entities?: unknown[] },
  message_id: number,
  keepFile: KeepFile,
): { update: Record<string, unknown>; messageId: number; chatId: string } {
  let text = message.text;
  const entities: unknown[] = [...(message.entities ?? [])];
  if (message.mentionBot === true) {
    const handle = `@${fakeBot.username}`;
    text = `${handle} ${text}`;
    entities.push({ type: 'mention', offset: 0, length: handle.length });
  }
  const chat = chatOf(message.chat, message.from);
  const body: Record<string, unknown> = { message_id, date: Math.floor(Date.now() / 1000), chat, from: userOf(message.from) };
  const attachment = message.attachment ?? (message.image === true ? { kind: 'image' as const, data: fakePicture, mediaType: 'image/png' } : undefined);
  if (attachment !== undefined) {
    if (attachment.kind === 'image') {
      // As Telegram does: the photo in several sizes, smallest first (here a thumbnail with other bytes, then the photo).
      body.photo = [{ ...keepFile(new Uint8Array([0xff, 0xd8, 0xff, 0x00]), 'jpg'), width: 90, height: 67 }, { ...keepFile(attachment.data, 'jpg'), width: 1280, height: 960 }];
    } else if (attachment.kind === 'voice') {
      body.voice = { ...keepFile(attachment.data, 'oga'), duration: 3, mime_type: attachment.mediaType };
    } else {
      body.document = { ...keepFile(attachment.data, 'bin'), mime_type: attachment.mediaType, ...(attachment.name === undefined ? {} : { file_name: attachment.name }) };
    }
    if (text !== '') body.caption = text;
    if (entities.length > 0) body.caption_entities = entities;
  } else {
    body.text = text;
    if (entities.length > 0) body.entities = entities;
  }
  if (message.replyTo !== undefined) {
    body.reply_to_message = {
      message_id: Number(message.replyTo.id),
      date: Math.floor(Date.now() / 1000),
      chat,
      from: message.replyTo.fromBot ? fakeBot : userOf(message.from),
      text: 'an earlier message',
    };
  }
  return { update: { message: body }, messageId: message_id, chatId: String(chat.id) };
}
