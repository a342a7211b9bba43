/** WhatsApp's addresses in Roster's terms: a person's handle, a chat's stable id, a chat to send to, and the bot's mentions. */
import { ChannelError } from '@roster/channels';
import { isLidUser, isPnUser, jidDecode, jidNormalizedUser } from 'baileys';

/** A person's handle: their number (`+4915…`) where WhatsApp tells it, else their LID (`…@lid`). */
export function handleOf(jid: string, alt: string | undefined): string {
  const number = [jid, alt].find((candidate) => candidate !== undefined && isPnUser(candidate) === true);
  if (number !== undefined) return `+${jidDecode(number)!.user}`;
  return jidNormalizedUser(jid);
}

/** The one-to-one chat's stable id: the number's jid where known, so a chat addressed by LID is the same conversation. */
export function chatJidOf(jid: string, alt: string | undefined): string {
  const number = [jid, alt].find((candidate) => candidate !== undefined && isPnUser(candidate) === true);
  return jidNormalizedUser(number ?? jid);
}

/** A chat to send to: a jid, or a handle (`+4915…` becomes its jid). */
export function toJid(chatId: string): string {
  const number = /^\+([0-9]{5,20})$/.exec(chatId);
  if (number !== null) return `${number[1]}@s.whatsapp.net`;
  if (isLidUser(chatId) === true || chatId.includes('@')) return chatId;
  throw new ChannelError('unreachable', 'A WhatsApp chat is a number (+4915…) or a jid.');
}

/** The bot's @mentions taken out of a message (WhatsApp writes them as `@<number>` or `@<lid>`). */
export function withoutMentions(text: string, bot: { pn: string | undefined; lid: string | undefined }): string {
  let result = text;
  for (const jid of [bot.pn, bot.lid]) {
    const user = jid === undefined ? undefined : jidDecode(jid)?.user;
    if (user === undefined) continue;
    result = result.replace(new RegExp(`(^|\\s)@${user}(?![0-9])[,:]?`, 'g'), '$1');
  }
  return result.replace(/[ \t]{2,}/g, ' ').trim();
}
