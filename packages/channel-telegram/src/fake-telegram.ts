/**
 * A local HTTP server that answers like the Telegram Bot API (getMe,
 * setWebhook and deleteWebhook, getUpdates with long polling and offsets,
 * or, with a webhook set, each update posted to it with its secret header,
 * as Telegram does; sendMessage,
 * sendChatAction, editMessageText, answerCallbackQuery; getFile and the
 * file download address /file/bot<token>/<file_path>), with the platform's
 * failures on demand: a 429 with retry_after, a 403 from a person who
 * blocked the bot. Test-only: excluded from the build.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Delivered, FakePlatform, SendAttempt, SentRecord } from '@roster/channels/testing';
import { fakeBot, groupChat, messageUpdate, userOf } from './fake-telegram-updates.js';
import { createTelegramAdapter, telegramSecretHeader, telegramWebhookPath, type TelegramAdapter } from './telegram-adapter.js';

export { fakeBot } from './fake-telegram-updates.js';


interface QueuedUpdate {
  update: Record<string, unknown> & { update_id: number };
  /** Resolved once the bot has taken it: returned by getUpdates, and confirmed by a later poll's offset. */
  taken: () => void;
  returned: boolean;
}

export interface FakeTelegram extends FakePlatform {
  readonly apiRoot: string;
  readonly token: string;
  /** Every Bot API method called, in order. */
  readonly calls: string[];
  /** How many long polls were ended by another one (answered 409, as Telegram does when two processes poll one bot). */
  conflicts(): number;
  /** Queue a raw update, as Telegram would; resolves once the bot has taken it. */
  push(update: Record<string, unknown>): Promise<number>;
  /** The webhook set with setWebhook, or null (long polling). */
  webhook(): { url: string; secretToken: string | null } | null;
  /** Every edit of a sent message the platform accepted, in order, with its time. */
  edits(): Array<{ id: string; text: string; at: number }>;
  /** The HTTP status of each webhook request, in order. */
  webhookAnswers(): number[];
  /** The file paths the bot downloaded from /file/bot<token>/…, in order. */
  downloads(): string[];
  /** Every Bot API call as it arrived (method and parsed body), in order. */
  requests(): Array<{ method: string; body: Record<string, unknown> }>;
  readonly adapter: TelegramAdapter;
}

/**
 * Start the fake. `webhook: true`: the adapter it makes runs in webhook
 * mode, behind a local receiver standing for Roster's server (which hands
 * each request to `handleWebhook`).
 */
export async function startFakeTelegram(options: { token?: string; webhook?: boolean } = {}): Promise<FakeTelegram> {
  const token = options.token ?? '123456:TEST-token_abc';
  let nextUpdate = 1;
  let nextMessage = 1000;
  const queue: QueuedUpdate[] = [];
  const waiting = new Set<() => void>();
  /** The long poll being held, and how to end it with Telegram's 409 when another one arrives. */
  let heldPoll: (() => void) | null = null;
  let conflicts = 0;
  const calls: string[] = [];
  const requests: Array<{ method: string; body: Record<string, unknown> }> = [];
  const sent: SentRecord[] = [];
  const edits: Array<{ id: string; text: string; at: number }> = [];
  const attempts: SendAttempt[] = [];
  const typing: string[] = [];
  const pressAnswers: string[] = [];
  const blocked = new Set<string>();
  let rateLimitNext: number | null = null;
  let webhook: { url: string; secretToken: string | null } | null = null;
  const webhookAnswers: number[] = [];
  /** Files people sent, by file id; Telegram's own limit for getFile is 20 MB. */
  const files = new Map<string, { data: Uint8Array; path: string }>();
  const downloads: string[] = [];
  let nextFile = 1;
  const fileLimit = 20 * 1024 * 1024;

  function keepFile(data: Uint8Array, extension: string): { file_id: string; file_unique_id: string; file_size: number } {
    const n = nextFile++;
    const fileId = `file-${n}`;
    files.set(fileId, { data, path: `files/file_${n}.${extension}` });
    return { file_id: fileId, file_unique_id: `unique-${n}`, file_size: data.byteLength };
  }

  const wake = () => {
    for (const resolve of waiting) resolve();
    waiting.clear();
  };

  /** Post an update to the webhook as Telegram does; Telegram tries again later when the answer is not 2xx. */
  async function post(update: Record<string, unknown> & { update_id: number }): Promise<number> {
    const target = webhook!;
    const response = await fetch(target.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(target.secretToken === null ? {} : { [telegramSecretHeader]: target.secretToken }) },
      body: JSON.stringify(update),
    });
    await response.arrayBuffer();
    webhookAnswers.push(response.status);
    return update.update_id;
  }

  function push(update: Record<string, unknown>): Promise<number> {
    const update_id = typeof update.update_id === 'number' ? update.update_id : nextUpdate++;
    if (webhook !== null) return post({ ...update, update_id });
    return new Promise((resolve) => {
      queue.push({ update: { ...update, update_id }, taken: () => resolve(update_id), returned: false });
      wake();
    });
  }

  async function getUpdates(body: { offset?: number; timeout?: number; limit?: number }, gone: () => boolean = () => false): Promise<unknown[] | null> {
    // As Telegram: an update is confirmed by a poll whose offset is past its id, and leaves the queue;
    // one given out but not confirmed so (its poller stopped first) is given to the next poll again.
    // A redelivery is queued anew, not yet given out, and so is not confirmed by an offset already past it.
    const offset = body.offset ?? 0;
    for (let index = queue.length - 1; index >= 0; index -= 1) {
      const item = queue[index]!;
      if (!item.returned || item.update.update_id >= offset) continue;
      item.taken();
      queue.splice(index, 1);
    }
    // Telegram serves one poller per bot: a new getUpdates ends the one it holds with 409.
    heldPoll?.();
    let superseded = false;
    if (queue.length === 0) {
      // Long polling: hold the call until an update arrives, but not long, so that stopping is quick.
      await new Promise<void>((resolve) => {
        heldPoll = () => {
          // A poll whose caller hung up (a stopping process) is not held any more: nothing is cut off.
          superseded = !gone();
          waiting.delete(done);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiting.delete(done);
          resolve();
        }, Math.min((body.timeout ?? 0) * 1000, 300));
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        waiting.add(done);
      });
    }
    heldPoll = null;
    // Nothing goes to a caller that hung up: what is queued waits for the next poll.
    if (gone()) return [];
    if (superseded) {
      // Counted once it is clear the caller was still there: a caller that hung up just before (a
      // stopping process) may be seen closed only after the next poll arrived, and is cut off from nothing.
      setTimeout(() => {
        if (!gone()) conflicts += 1;
      }, 200).unref();
      return null;
    }
    const batch = queue.filter((entry) => !entry.returned || entry.update.update_id >= offset).slice(0, body.limit ?? 100);
    for (const item of batch) item.returned = true;
    return batch.map((item) => item.update);
  }

  function refusal(chatId: string): { status: number; body: unknown } | null {
    if (rateLimitNext !== null) {
      const seconds = rateLimitNext;
      rateLimitNext = null;
      attempts.push({ chatId, at: Date.now(), outcome: 'rate-limited' });
      return { status: 429, body: { ok: false, error_code: 429, description: `Too Many Requests: retry after ${seconds}`, parameters: { retry_after: seconds } } };
    }
    if (blocked.has(chatId)) {
      attempts.push({ chatId, at: Date.now(), outcome: 'blocked' });
      return { status: 403, body: { ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' } };
    }
    return null;
  }

  async function answer(method: string, body: Record<string, unknown>, gone: () => boolean = () => false): Promise<{ status: number; body: unknown }> {
    const ok = (result: unknown) => ({ status: 200, body: { ok: true, result } });
    switch (method) {
      case 'getFile': {
        const file = files.get(String(body.file_id ?? ''));
        if (file === undefined) return { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: invalid file_id' } };
        if (file.data.byteLength > fileLimit) return { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: file is too big' } };
        return ok({ file_id: body.file_id, file_unique_id: `unique-${String(body.file_id)}`, file_size: file.data.byteLength, file_path: file.path });
      }
      case 'getMe':
        return ok(fakeBot);
      case 'deleteWebhook':
        webhook = null;
        return ok(true);
      case 'setWebhook': {
        const url = String(body.url ?? '');
        if (!/^https?:\/\//.test(url)) return { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook' } };
        webhook = { url, secretToken: typeof body.secret_token === 'string' ? body.secret_token : null };
        return ok(true);
      }
      case 'getUpdates': {
        const updates = await getUpdates(body as { offset?: number; timeout?: number; limit?: number }, gone);
        if (updates === null) {
          return { status: 409, body: { ok: false, error_code: 409, description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running' } };
        }
        return ok(updates);
      }
      case 'sendMessage': {
        const chatId = String(body.chat_id);
        const refused = refusal(chatId);
        if (refused !== null) return refused;
        const text = String(body.text ?? '');
        if (text.length > 4096) return { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: message is too long' } };
        const message_id = nextMessage++;
        const markup = body.reply_markup as { inline_keyboard?: Array<Array<{ callback_data?: string }>> } | undefined;
        const buttons = (markup?.inline_keyboard ?? []).flat().flatMap((button) => {
          const match = /^roster:(approve|reject):(.+)$/.exec(button.callback_data ?? '');
          return match === null ? [] : [{ approvalId: match[2]!, decision: match[1] as 'approve' | 'reject' }];
        });
        sent.push({ id: String(message_id), chatId, text, buttons, at: Date.now() });
        attempts.push({ chatId, at: Date.now(), outcome: 'sent' });
        return ok({ message_id, date: Math.floor(Date.now() / 1000), chat: { id: Number(chatId), type: Number(chatId) < 0 ? 'supergroup' : 'private' }, from: fakeBot, text });
      }
      case 'sendChatAction': {
        const chatId = String(body.chat_id);
        if (blocked.has(chatId)) return { status: 403, body: { ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' } };
        typing.push(chatId);
        return ok(true);
      }
      case 'editMessageText': {
        const record = sent.find((message) => message.id === String(body.message_id) && message.chatId === String(body.chat_id));
        if (record === undefined) return { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: message to edit not found' } };
        record.text = String(body.text ?? '');
        edits.push({ id: record.id, text: record.text, at: Date.now() });
        const markup = body.reply_markup as { inline_keyboard?: unknown[] } | undefined;
        if (markup !== undefined && (markup.inline_keyboard ?? []).length === 0) record.buttons = [];
        return ok({ message_id: Number(record.id), date: Math.floor(Date.now() / 1000), chat: { id: Number(record.chatId), type: 'private' }, text: record.text });
      }
      case 'answerCallbackQuery':
        pressAnswers.push(String(body.text ?? ''));
        return ok(true);
      default:
        return { status: 404, body: { ok: false, error_code: 404, description: 'Not Found: method not found' } };
    }
  }

  const server = http.createServer((request, response) => {
    let hungUp = false;
    response.on('close', () => {
      if (!response.writableEnded) hungUp = true;
    });
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      // A file's bytes, at the address getFile's file_path names.
      const download = /^\/file\/bot([^/]+)\/(.+)$/.exec(request.url ?? '');
      if (download !== null) {
        const file = [...files.values()].find((candidate) => candidate.path === download[2]);
        if (download[1] !== token || file === undefined) {
          response.writeHead(404, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ ok: false, error_code: 404, description: 'Not Found' }));
          return;
        }
        downloads.push(file.path);
        response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(file.data.byteLength) });
        response.end(Buffer.from(file.data));
        return;
      }
      const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(request.url ?? '');
      const reply = (status: number, body: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      };
      if (match === null) return reply(404, { ok: false, error_code: 404, description: 'Not Found' });
      if (match[1] !== token) return reply(401, { ok: false, error_code: 401, description: 'Unauthorized' });
      const method = match[2]!;
      calls.push(method);
      let body: Record<string, unknown> = {};
      try {
        const raw = Buffer.concat(chunks).toString('utf8');
        body = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
      } catch {
        return reply(400, { ok: false, error_code: 400, description: 'Bad Request: invalid JSON' });
      }
      requests.push({ method, body });
      answer(method, body, () => hungUp || request.socket.destroyed).then(
        (result) => reply(result.status, result.body),
        () => reply(500, { ok: false, error_code: 500, description: 'Internal Server Error' }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const apiRoot = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  // Webhook mode: a receiver standing for Roster's server hands each request to the adapter.
  let receiver: http.Server | null = null;
  let adapter: TelegramAdapter;
  if (options.webhook === true) {
    const secretToken = 'fake-webhook-secret_0123456789';
    receiver = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        let body: unknown = null;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = null;
        }
        adapter.handleWebhook({ headers: request.headers, body }).then(
          (status) => response.writeHead(status).end(),
          () => response.writeHead(500).end(),
        );
      });
    });
    await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}${telegramWebhookPath}`;
    adapter = createTelegramAdapter({ token, apiRoot, webhook: { url, secretToken } });
  } else {
    adapter = createTelegramAdapter({ token, apiRoot });
  }

  const deliveries = new Map<string, Record<string, unknown>>();
  async function deliverUpdate(update: Record<string, unknown>, chatId: string, messageId: number): Promise<Delivered> {
    const updateId = nextUpdate++;
    const full = { ...update, update_id: updateId };
    deliveries.set(String(updateId), full);
    await push(full);
    return { chatId, messageId: String(messageId), deliveryId: String(updateId) };
  }

  const fake: FakeTelegram = {
    apiRoot,
    token,
    calls,
    conflicts: () => conflicts,
    push,
    adapter,
    webhook: () => (webhook === null ? null : { ...webhook }),
    webhookAnswers: () => [...webhookAnswers],
    downloads: () => [...downloads],
    requests: () => requests.map((request) => structuredClone(request)),
    groupChatId: String(groupChat.id),
    user: (n) => ({ id: String(5_000_000 + n), name: `Tess ${n}` }),
    dmChatId: (user) => user.id,
    async deliver(message) {
      const { update, messageId, chatId } = messageUpdate(message, nextMessage++, keepFile);
      return deliverUpdate(update, chatId, messageId);
    },
    async command(from, chat, words) {
      const [name = '', ...rest] = words.split(' ');
      const token = chat === 'group' ? `/${name}@${fakeBot.username}` : `/${name}`;
      const text = [token, ...rest].join(' ');
      const { update, messageId, chatId } = messageUpdate({ chat, from, text, entities: [{ type: 'bot_command', offset: 0, length: token.length }] }, nextMessage++, keepFile);
      return deliverUpdate(update, chatId, messageId);
    },
    async redeliver(delivered) {
      const update = deliveries.get(delivered.deliveryId);
      if (update === undefined) throw new Error(`no delivery ${delivered.deliveryId}`);
      // Telegram sends an update again when the bot did not confirm it (a restart, a lost answer).
      await push(update);
    },
    async press(from, record, decision) {
      const approvalId = record.buttons[0]?.approvalId ?? '';
      await push({
        callback_query: {
          id: `cb-${nextUpdate}`,
          from: userOf(from),
          chat_instance: 'ci-1',
          data: `roster:${decision}:${approvalId}`,
          message: { message_id: Number(record.id), date: Math.floor(record.at / 1000), chat: { id: Number(record.chatId), type: 'private' }, from: fakeBot, text: record.text },
        },
      });
    },
    pressAnswers: () => [...pressAnswers],
    sent: () => sent.map((record) => ({ ...record })),
    edits: () => edits.map((edit) => ({ ...edit })),
    attempts: () => [...attempts],
    typing: () => [...typing],
    rateLimitNextSend(seconds) {
      rateLimitNext = seconds;
    },
    block(user) {
      blocked.add(user.id);
    },
    unblock(user) {
      blocked.delete(user.id);
    },
    async close() {
      wake();
      for (const item of queue) item.taken();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (receiver !== null) {
        receiver.closeAllConnections();
        await new Promise<void>((resolve) => receiver!.close(() => resolve()));
      }
    },
  };
  return fake;
}
