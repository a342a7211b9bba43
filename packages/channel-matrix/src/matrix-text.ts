/**
 * What a Matrix message says, read without the SDK: who it addresses, which
 * of Roster's commands it is, and how an approval is decided on a platform
 * without buttons. Pure functions, so that the adapter stays about the
 * connection and these rules can be read (and tested) on their own.
 */

/** The Matrix name of the channel in Roster's core. */
export const matrixChannel = 'matrix';

/**
 * The longest text one message carries, in UTF-16 code units. Matrix has no
 * small text limit; an event is at most 64 KiB of JSON. 16,000 units are at
 * most 48,000 bytes of UTF-8 (three bytes a unit at worst outside escapes),
 * which leaves room for the event's envelope, an approval's instructions and
 * an edit's `m.new_content`; and a message much longer than that is a wall
 * nobody reads on a phone.
 */
export const matrixTextLimit = 16_000;

/** The content key that marks the bot's approval message, with the approval's id: a reaction or reply on it decides. */
export const approvalField = 'org.roster.approval';

/** The content key that marks the bot's notice to an encrypted room, so that it is said once even across restarts. */
export const noticeField = 'org.roster.notice';

/** What the notice field holds for the encrypted-room notice. */
export const unencryptedOnly = 'unencrypted-only';

/** What an encrypted room is told, once. */
export const encryptedRoomNotice =
  'This room is end-to-end encrypted, and this bot reads unencrypted rooms only: it cannot read what is said here and will not answer. Talk to it in a room without encryption (a new direct chat with encryption turned off).';

/** The reactions the bot offers on an approval message. */
export const approveKey = '👍';
export const rejectKey = '👎';

/** What follows an approval's text: Matrix has no buttons, so the owner reacts or replies. */
export const approvalInstructions = `\n\nReact ${approveKey} to approve or ${rejectKey} to reject (or reply “approve” or “reject” to this message).`;

/** Roster's commands (the core's `/name`), which a Matrix message may write `!name` or `/name`. */
const commandNames = new Set(['agents', 'agent', 'team', 'memory', 'forget', 'help', 'link']);

/**
 * A command in Matrix's forms. Element keeps `/` for its own commands, so a
 * person writes `!agents` (the Matrix bots' habit); `/agents` sent as a
 * message works too. Only Roster's command names are rewritten into the
 * core's form: `!ping` for another bot stays words. A `/word` that is not one
 * of Roster's is `foreign` (for another bot, or a client's command sent by mistake).
 */
export function matrixCommand(text: string): { text: string; command: boolean; foreign: boolean } {
  const match = /^([!/])([A-Za-z]+)(?=\s|$)([\s\S]*)$/u.exec(text.trim());
  if (match === null) return { text, command: false, foreign: false };
  const [, prefix, name = '', rest = ''] = match;
  const lower = name.toLowerCase();
  if (!commandNames.has(lower)) return { text, command: false, foreign: prefix === '/' };
  const words = rest.trim();
  return { text: words === '' ? `/${lower}` : `/${lower} ${words}`, command: true, foreign: false };
}

/** The bot as messages may name it. */
export interface BotNames {
  userId: string;
  /** Its display names (global, and in the room), most specific first; may be empty. */
  displayNames: readonly string[];
}

/** The part of a message's content these rules read. */
export interface MessageContent {
  body?: unknown;
  'm.mentions'?: unknown;
  'm.relates_to'?: unknown;
}

/** How a message addresses the bot, and its words without the address. */
export interface Addressing {
  /** The body names the bot (its user id, or a display name). */
  namesBot: boolean;
  /** The sender's client said it mentions the bot (`m.mentions.user_ids`). */
  mentioned: boolean;
  /** The message's own `m.mentions` was given (then a display name in the words is not a mention by itself). */
  intentional: boolean;
  /** The words, without a reply's quoted fallback and without the bot's name at their start. */
  text: string;
}

const escape = (value: string): string => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A reply's fallback (`> <@someone:server> quoted` lines, then a blank line), from before Matrix 1.13. */
const replyFallback = /^(?:>[^\n]*\n)+\n/u;

/** The event id a message replies to, or null. */
export function replyTarget(content: MessageContent): string | null {
  const relation = content['m.relates_to'];
  if (typeof relation !== 'object' || relation === null) return null;
  const inReplyTo = (relation as { 'm.in_reply_to'?: { event_id?: unknown } })['m.in_reply_to'];
  // A thread's fallback reply is not a reply to that message: it only keeps threadless clients readable.
  if ((relation as { is_falling_back?: unknown }).is_falling_back === true) return null;
  return typeof inReplyTo?.event_id === 'string' ? inReplyTo.event_id : null;
}

/** The sender a reply's fallback quotes (`> <@bot:server> …`), or null. */
export function quotedSender(body: string): string | null {
  return /^> <(@[^>\s]+)>/u.exec(body)?.[1] ?? null;
}

/**
 * Read how a message addresses the bot. Matrix 1.7's `m.mentions` is what a
 * client says it mentions; a message without it (an older client) mentions
 * the bot by naming it, as the legacy push rules do. The bot's full user id
 * in the words is a mention either way.
 */
export function addressing(content: MessageContent, bot: BotNames): Addressing {
  const raw = typeof content.body === 'string' ? content.body : '';
  const body = replyTarget(content) !== null ? raw.replace(replyFallback, '') : raw;
  const mentions = content['m.mentions'];
  const intentional = typeof mentions === 'object' && mentions !== null;
  const userIds = intentional ? (mentions as { user_ids?: unknown }).user_ids : undefined;
  const mentioned = Array.isArray(userIds) && userIds.includes(bot.userId);
  const idInBody = body.toLowerCase().includes(bot.userId.toLowerCase());
  const names = bot.displayNames.filter((name) => name.trim() !== '');
  const nameInBody = names.some((name) => new RegExp(`(^|[^\\p{L}\\p{N}_])${escape(name)}(?=$|[^\\p{L}\\p{N}_])`, 'iu').test(body));
  let text = body.replace(new RegExp(`${escape(bot.userId)}[,:]?`, 'giu'), ' ');
  // A client's mention pill leaves the name first, followed by a colon or comma ("Roster: what is new?").
  for (const name of [...names].sort((a, b) => b.length - a.length)) {
    text = text.replace(new RegExp(`^\\s*@?${escape(name)}(?:[,:]\\s*|\\s+(?=\\S))`, 'iu'), '');
  }
  text = text.replace(/[ \t]{2,}/g, ' ').trim();
  return { namesBot: idInBody || (!intentional && nameInBody) || (intentional && mentioned && nameInBody), mentioned, intentional, text };
}

/** Marks Unicode adds to an emoji (skin tones, text/emoji presentation) that do not change what it says. */
const emojiModifiers = /[\u{1F3FB}-\u{1F3FF}\uFE0E\uFE0F]/gu;
const approving = new Set(['👍', '✅', '✔', '☑', '+1']);
const rejecting = new Set(['👎', '❌', '✖', '🚫', '-1']);

/** What a reaction's key decides on an approval message, or null when it decides nothing. */
export function reactionDecision(key: string): 'approve' | 'reject' | null {
  const normalized = key.replace(emojiModifiers, '').trim();
  if (approving.has(normalized)) return 'approve';
  if (rejecting.has(normalized)) return 'reject';
  return null;
}

/** What a reply to an approval message decides, or null when its words are not a decision. */
export function replyDecision(text: string): 'approve' | 'reject' | null {
  const words = text.replace(emojiModifiers, '').trim().toLowerCase().replace(/[.!]+$/u, '');
  if (['approve', 'approved', 'yes', 'ok', 'okay', '👍', '✅'].includes(words)) return 'approve';
  if (['reject', 'rejected', 'no', '👎', '❌'].includes(words)) return 'reject';
  return null;
}

/** An approval message's own text, without the instructions the bot added to it. */
export function approvalText(body: string): string {
  return body.endsWith(approvalInstructions) ? body.slice(0, -approvalInstructions.length) : body;
}

/**
 * The conversation a message belongs to. A group is its room. A direct chat
 * is the room *and* its person: a room with two members can change hands (one
 * leaves, another joins) or grow, and the core keeps a direct conversation's
 * person and kind from its first message, so a new pair or a new kind is a new
 * conversation, never the old one's memory in front of someone else.
 */
export function conversationId(account: string, roomId: string, kind: 'dm' | 'group', sender: string): string {
  const id = kind === 'dm' ? `${roomId}/${sender}` : roomId;
  return account === 'default' ? id : `${account}:${id}`;
}

/** Whether `userId` is in a pattern list of `MATRIX_ROOM_INVITERS`: an id, `*:server` (anyone there), or `*`. */
export function matchesInviter(userId: string, patterns: readonly string[]): boolean {
  const server = userId.slice(userId.indexOf(':') + 1).toLowerCase();
  return patterns.some((pattern) => pattern === '*' || pattern === userId || (pattern.startsWith('*:') && pattern.slice(2).toLowerCase() === server));
}

/** Whether a value is a Matrix user id (`@localpart:server`). */
export const userIdPattern = /^@[^:\s]+:[^\s]+$/u;

/** The fallback an edit carries for clients that show edits as new messages: its start, marked. */
const editFallbackLength = 2000;

/**
 * The content of an edit (`m.replace`) that makes a message read `text`.
 * Clients show `m.new_content`; the body is the fallback older ones show,
 * kept short so that an edit of a message at the limit stays well under an
 * event's 64 KiB.
 */
export function editContent(eventId: string, text: string): Record<string, unknown> {
  let cut = Math.min(text.length, editFallbackLength);
  const code = text.charCodeAt(cut - 1);
  if (cut < text.length && code >= 0xd800 && code <= 0xdbff) cut -= 1;
  const fallback = cut < text.length ? `${text.slice(0, cut)} …` : text;
  return {
    msgtype: 'm.text',
    body: `* ${fallback}`,
    'm.new_content': { msgtype: 'm.text', body: text, 'm.mentions': {} },
    'm.mentions': {},
    'm.relates_to': { rel_type: 'm.replace', event_id: eventId },
  };
}
