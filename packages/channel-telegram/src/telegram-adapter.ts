import { timingSafeEqual } from 'node:crypto';
import type { ChannelLogger as Logger } from '@roster/contracts';
import { ChannelError, downloadFile, telegramCommand, tooLargeText, type ChannelAdapter, type ChannelEvent, type ChannelStartOptions, type ChannelTarget } from '@roster/channels';
import { maxFileBytes, type FileKind, type InboundFile } from '@roster/contracts';
import { Telegraf, Telegram, TelegramError } from 'telegraf';
import type { CallbackQuery, MessageEntity, Update, UserFromGetMe } from 'telegraf/types';

export interface TelegramAdapterOptions {
  /** The bot's token from BotFather. Never logged. */
  token: string;
  /** The bot account's name in Roster's bindings (default `default`). */
  account?: string;
  /** Another Bot API server (a self-hosted one; TELEGRAM_API_ROOT); Telegram's own by default. */
  apiRoot?: string;
  logger?: Logger;
  /**
   * Webhook mode instead of long polling: Telegram posts each update to
   * `url` (public, https), with `secretToken` in the
   * X-Telegram-Bot-Api-Secret-Token header; the server hands the request to
   * `handleWebhook`. The secret is 1 to 256 of A-Z a-z 0-9 _ -.
   */
  webhook?: { url: string; secretToken: string };
}

/** A webhook request as the server received it. */
export interface TelegramWebhookRequest {
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** The Telegram adapter: the contract, plus the webhook entry the server mounts in webhook mode. */
export interface TelegramAdapter extends ChannelAdapter {
  readonly mode: 'polling' | 'webhook';
  /**
   * One webhook request: 401 when the secret header is missing or wrong
   * (nothing is handled), 400 when the body is not an update, 503 before the
   * adapter started, else 200 once the update is handed on (answers are sent
   * on their own, not in the webhook's response).
   */
  handleWebhook(request: TelegramWebhookRequest): Promise<number>;
}

/** Where the server receives Telegram's webhook requests. */
export { telegramWebhookPath } from './plugin.js';

/** The header Telegram sends the webhook's secret in. */
export const telegramSecretHeader = 'x-telegram-bot-api-secret-token';

/** Telegram's longest text message, in UTF-16 code units. */
export const telegramTextLimit = 4096;

const approvalData = /^roster:(approve|reject):([0-9a-f-]{36})$/;

/**
 * The Telegram adapter, on telegraf with long polling. One-to-one chats are
 * always for the bot; in groups, a message is for it when it @mentions the
 * bot, replies to the bot, or is a command. Text goes out plain (no parse
 * mode), so nothing needs escaping. Approvals carry an inline keyboard.
 */
export function createTelegramAdapter(options: TelegramAdapterOptions): TelegramAdapter {
  const account = options.account ?? 'default';
  if (options.webhook !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(options.webhook.secretToken)) {
    throw new ChannelError('failed', 'A Telegram webhook secret is 1 to 256 of A-Z, a-z, 0-9, _ and -.');
  }
  if (options.webhook !== undefined && !/^https:\/\//.test(options.webhook.url) && !/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(options.webhook.url)) {
    throw new ChannelError('failed', `Telegram posts webhooks to https addresses only, not ${JSON.stringify(options.webhook.url)}.`);
  }
  const secret = options.webhook === undefined ? null : Buffer.from(options.webhook.secretToken);
  const log = options.logger?.child({ component: 'gateway/telegram', account });
  // The Bot API path is resolved against the root: keep its own path (a proxy's prefix) by ending it with /.
  const apiRoot = options.apiRoot === undefined ? undefined : options.apiRoot.endsWith('/') ? options.apiRoot : `${options.apiRoot}/`;
  const bot = new Telegraf(options.token, { telegram: apiRoot === undefined ? {} : { apiRoot } });
  let me: UserFromGetMe | undefined;
  let polling: Promise<void> | undefined;
  let receiving = false;

  /** A Bot API call, its failure said in Roster's terms (never with the text that was sent). */
  async function call<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw toChannelError(what, error);
    }
  }

  function conversationId(chatId: number): string {
    return account === 'default' ? String(chatId) : `${account}:${chatId}`;
  }

  function toEvent(update: Update.MessageUpdate): ChannelEvent | null {
    const message = update.message;
    const from = message.from;
    if (from === undefined || from.is_bot || me === undefined) return null;
    const chat = message.chat;
    const kind = chat.type === 'private' ? 'dm' : 'group';
    const raw = 'text' in message ? message.text : 'caption' in message ? (message.caption ?? '') : '';
    const entities: MessageEntity[] = ('entities' in message ? message.entities : 'caption_entities' in message ? message.caption_entities : undefined) ?? [];
    const handle = `@${me.username}`;
    let mentionsBot = entities.some(
      (entity) =>
        (entity.type === 'mention' && raw.slice(entity.offset, entity.offset + entity.length).toLowerCase() === handle.toLowerCase()) ||
        (entity.type === 'text_mention' && entity.user.id === me!.id),
    );
    let text = raw;
    if (mentionsBot) text = withoutHandle(text, handle);
    const command = telegramCommand(text, me.username);
    if (command.forAnotherBot) return null;
    mentionsBot ||= command.namesBot;
    text = command.text;
    const reply = 'reply_to_message' in message ? message.reply_to_message : undefined;
    const media: ChannelEvent['media'] = [];
    const attachments: Attachment[] = [];
    if ('photo' in message) {
      media.push('image');
      // Telegram sends each photo in several sizes, smallest first: the largest is read.
      const largest = message.photo.reduce((best, size) => (size.width * size.height >= best.width * best.height ? size : best));
      attachments.push({ fileId: largest.file_id, size: largest.file_size, kind: 'image', mediaType: 'image/jpeg' });
    }
    if ('voice' in message) {
      media.push('voice');
      attachments.push({ fileId: message.voice.file_id, size: message.voice.file_size, kind: 'audio', mediaType: message.voice.mime_type ?? 'audio/ogg' });
    }
    if ('audio' in message) {
      media.push('audio');
      const audio = message.audio;
      attachments.push({ fileId: audio.file_id, size: audio.file_size, kind: 'audio', mediaType: audio.mime_type ?? 'audio/mpeg', name: audio.file_name });
    }
    if ('video' in message || 'video_note' in message) media.push('video');
    if ('document' in message) {
      media.push('file');
      const document = message.document;
      const mediaType = document.mime_type ?? 'application/octet-stream';
      const kind: FileKind = mediaType.startsWith('image/') ? 'image' : mediaType.startsWith('audio/') ? 'audio' : 'file';
      attachments.push({ fileId: document.file_id, size: document.file_size, kind, mediaType, name: document.file_name });
    }
    const displayName = [from.first_name, from.last_name].filter((part) => part !== undefined && part !== '').join(' ') || from.username;
    const target: ChannelTarget = { chatId: String(chat.id) };
    if (kind === 'group') target.replyTo = String(message.message_id);
    else target.recipient = String(from.id);
    return {
      inbound: {
        channel: 'telegram',
        account,
        conversation: { externalId: conversationId(chat.id), kind },
        sender: { externalId: String(from.id), ...(displayName === undefined ? {} : { displayName }) },
        externalMessageId: String(message.message_id),
        text,
      },
      mentionsBot,
      replyTo: reply === undefined ? null : String(reply.message_id),
      replyToBot: reply?.from?.id === me.id,
      media,
      ...(attachments.length === 0 ? {} : { fetchFiles: (signal: AbortSignal) => fetchFiles(attachments, media, signal) }),
      target,
      deliveryId: String(update.update_id),
    };
  }

  /**
   * The files of a message, from the Bot API: getFile for each (refused
   * first when Telegram announced a size over the limit), then its bytes from
   * the file address under the API root, at most `maxFileBytes`.
   */
  async function fetchFiles(attachments: readonly Attachment[], media: ChannelEvent['media'], signal: AbortSignal) {
    const files: InboundFile[] = [];
    for (const attachment of attachments) {
      if (attachment.size !== undefined && attachment.size > maxFileBytes) throw new ChannelError('failed', tooLargeText(attachment.kind));
      let path: string | undefined;
      try {
        const file = await call('getFile', () => bot.telegram.getFile(attachment.fileId));
        if (file.file_size !== undefined && file.file_size > maxFileBytes) throw new ChannelError('failed', tooLargeText(attachment.kind));
        path = file.file_path;
      } catch (error) {
        // The Bot API gives no file over 20 MB: for a person that is the same refusal.
        if (ChannelError.isChannelError(error) && /file is too big/i.test(error.message)) throw new ChannelError('failed', tooLargeText(attachment.kind));
        throw error;
      }
      if (path === undefined) throw new ChannelError('failed', 'Telegram gave no address for the file; send it again in a moment.', { retryable: true });
      const url = new URL(`file/bot${options.token}/${path}`, apiRoot ?? 'https://api.telegram.org/');
      const data = await downloadFile(url.href, { kind: attachment.kind, platform: 'Telegram', signal });
      files.push({ kind: attachment.kind, mediaType: attachment.mediaType, data, ...(attachment.name === undefined ? {} : { name: attachment.name }) });
    }
    return { files, skipped: media.filter((kind) => kind === 'video') };
  }

  async function onCallback(start: ChannelStartOptions, query: CallbackQuery): Promise<void> {
    const data = 'data' in query ? approvalData.exec(query.data) : null;
    if (data === null || query.message === undefined) {
      await call('answerCallbackQuery', () => bot.telegram.answerCbQuery(query.id));
      return;
    }
    const chatId = String(query.message.chat.id);
    const messageId = String(query.message.message_id);
    const displayName = [query.from.first_name, query.from.last_name].filter((part) => part !== undefined && part !== '').join(' ');
    const result = await start.onApprovalPress({
      approvalId: data[2]!,
      decision: data[1] as 'approve' | 'reject',
      sender: { externalId: String(query.from.id), ...(displayName === '' ? {} : { displayName }) },
      target: { chatId },
    });
    // A toast holds 200 characters; the whole answer goes under the approval once decided.
    await call('answerCallbackQuery', () => bot.telegram.answerCbQuery(query.id, result.text.slice(0, 200)));
    if (result.decided) {
      const shown = 'text' in query.message ? query.message.text : '';
      const text = `${shown}\n\n${result.text}`;
      await call('editMessageText', () =>
        bot.telegram.editMessageText(chatId, Number(messageId), undefined, text.length <= telegramTextLimit ? text : result.text, { reply_markup: { inline_keyboard: [] } }),
      );
    }
  }

  return {
    channel: 'telegram',
    account,
    mode: options.webhook === undefined ? 'polling' : 'webhook',
    capabilities: { threads: false, buttons: true, media: true, typing: true, textLimit: telegramTextLimit, commandPrefix: '/' },

    async start(start) {
      // Telegraf asks for the next updates, which confirms these, once every handler of the batch has resolved: that is, once Roster has kept them.
      bot.on('message', async (context) => {
        const event = toEvent(context.update as Update.MessageUpdate);
        if (event !== null) await start.onMessage(event);
      });
      bot.on('callback_query', (context) => onCallback(start, context.callbackQuery));
      bot.catch((error) => log?.error({ err: safeError(error) }, 'a Telegram update could not be handled'));
      me = await call('getMe', () => bot.telegram.getMe());
      bot.botInfo = me;
      if (options.webhook !== undefined) {
        await call('setWebhook', () =>
          bot.telegram.setWebhook(options.webhook!.url, { secret_token: options.webhook!.secretToken, allowed_updates: ['message', 'callback_query'] }),
        );
        receiving = true;
        log?.info({ bot: me.username, url: options.webhook.url }, 'Telegram bot receiving (webhook)');
        return;
      }
      // Long polling needs no webhook; launch removes one left by another setup, then polls until stopped.
      polling = bot.launch({ allowedUpdates: ['message', 'callback_query'] }).catch((error: unknown) => {
        log?.error({ err: safeError(error) }, 'Telegram polling stopped: check TELEGRAM_BOT_TOKEN, and that no other process polls this bot');
        const code = (error as { response?: { error_code?: number } }).response?.error_code;
        start.onStopped?.(
          code === 409 ? 'Telegram gave this bot’s updates to another poller (409): another process polls the same token' : `Telegram polling stopped: ${(error as Error).message}`,
        );
      });
      log?.info({ bot: me.username }, 'Telegram bot receiving (long polling)');
    },

    async stop() {
      // A webhook stays set while Roster is down: Telegram keeps the updates and posts them again later.
      receiving = false;
      if (polling === undefined) return;
      bot.stop('roster stops');
      await polling;
      polling = undefined;
    },

    async handleWebhook(request) {
      const given = request.headers[telegramSecretHeader];
      const offered = Buffer.from(typeof given === 'string' ? given : '');
      if (secret === null || offered.length !== secret.length || !timingSafeEqual(offered, secret)) return 401;
      if (!receiving) return 503;
      const update = request.body;
      if (typeof update !== 'object' || update === null || typeof (update as { update_id?: unknown }).update_id !== 'number') return 400;
      // Handled in order; telegraf's handlers hand messages on without waiting for the answers.
      await bot.handleUpdate(update as Update);
      return 200;
    },

    async sendText(target, text) {
      const sent = await call('sendMessage', () =>
        bot.telegram.sendMessage(target.chatId, text, {
          link_preview_options: { is_disabled: true },
          ...(target.replyTo === undefined ? {} : { reply_parameters: { message_id: Number(target.replyTo), allow_sending_without_reply: true } }),
        }),
      );
      return { id: String(sent.message_id) };
    },

    async editText(target, messageId, text) {
      await call('editMessageText', () => bot.telegram.editMessageText(target.chatId, Number(messageId), undefined, text, { link_preview_options: { is_disabled: true } }));
    },

    async sendApproval(target, approval) {
      const sent = await call('sendMessage', () =>
        bot.telegram.sendMessage(target.chatId, approval.text, {
          reply_markup: {
            inline_keyboard: [
              [
                { text: 'Approve', callback_data: `roster:approve:${approval.id}` },
                { text: 'Reject', callback_data: `roster:reject:${approval.id}` },
              ],
            ],
          },
        }),
      );
      return { id: String(sent.message_id) };
    },

    async sendTyping(target) {
      await call('sendChatAction', () => bot.telegram.sendChatAction(target.chatId, 'typing'));
    },
  };
}

/** A file a message carries, as Telegram describes it before it is fetched. */
interface Attachment {
  fileId: string;
  /** What Telegram announced, when it did. */
  size: number | undefined;
  kind: FileKind;
  mediaType: string;
  name?: string | undefined;
}

/** The bot's @handle taken out of a message (it addresses the bot; the words are the rest). */
function withoutHandle(text: string, handle: string): string {
  const escaped = handle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text
    .replace(new RegExp(`(^|\\s)${escaped}(?![A-Za-z0-9_])[,:]?`, 'giu'), '$1')
    .replace(/[ \t]{2,}/g, ' ')
    .trim();
}

/**
 * A Bot API failure in Roster's terms: 429 waits as asked; a person who
 * blocked the bot, was deactivated, or a chat that is gone cannot be reached;
 * a 5xx or a network failure may be tried again.
 */
export function toChannelError(what: string, error: unknown): ChannelError {
  if (error instanceof TelegramError) {
    const description = error.description ?? '';
    if (error.code === 429) {
      const seconds = error.parameters?.retry_after ?? 1;
      return new ChannelError('rate-limited', `Telegram asked to wait ${seconds} s before the next ${what}.`, { retryAfterMs: seconds * 1000 });
    }
    if (error.code === 403 || (error.code === 400 && /chat not found|user not found|PEER_ID_INVALID/i.test(description))) {
      return new ChannelError('unreachable', `Telegram cannot deliver to this chat (${what}): ${description}.`);
    }
    if (error.code === 401 || error.code === 404) {
      return new ChannelError('failed', `Telegram refused the bot token (${what}): check TELEGRAM_BOT_TOKEN.`);
    }
    return new ChannelError('failed', `Telegram's ${what} failed: ${error.code} ${description}.`, { retryable: error.code >= 500 });
  }
  const name = error instanceof Error ? error.name : 'Error';
  return new ChannelError('failed', `Telegram's ${what} could not be reached (${name}); check TELEGRAM_API_ROOT and the network.`, { retryable: true });
}

/** What of an error may be logged: never the payload telegraf keeps (the text sent) or the token in a URL. */
function safeError(error: unknown): { name: string; message: string } {
  if (ChannelError.isChannelError(error)) return { name: error.name, message: error.message };
  if (error instanceof TelegramError) return { name: 'TelegramError', message: `${error.code}: ${error.description}` };
  const message = error instanceof Error ? error.message.replace(/bot\d+:[A-Za-z0-9_-]+/g, 'bot[redacted]') : String(error);
  return { name: error instanceof Error ? error.name : 'Error', message };
}

/**
 * Whether Telegram takes this token: `getMe` against the Bot API root, within
 * `timeoutMs` (default 5 s). Says why not in words an operator can act on.
 */
export async function checkTelegramToken(options: { token: string; apiRoot?: string; timeoutMs?: number }): Promise<{ ok: boolean; detail: string }> {
  const apiRoot = options.apiRoot === undefined ? undefined : options.apiRoot.endsWith('/') ? options.apiRoot : `${options.apiRoot}/`;
  const telegram = new Telegram(options.token, apiRoot === undefined ? {} : { apiRoot });
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 5000);
  try {
    const me = (await telegram.callApi('getMe', {}, { signal: controller.signal as never })) as UserFromGetMe;
    return { ok: true, detail: `token accepted: @${me.username}${options.apiRoot === undefined ? '' : ` at ${options.apiRoot}`}` };
  } catch (error) {
    return { ok: false, detail: toChannelError('getMe', error).message };
  } finally {
    clearTimeout(timer);
  }
}
