/**
 * A local HTTP server that answers like Slack's Web API (auth.test,
 * chat.postMessage, chat.postEphemeral, chat.update, and response URLs),
 * files people shared, at their url_private_download (the bot token
 * required, as Slack requires it), with Slack's failures on demand (a 429 with Retry-After, a conversation
 * that cannot be reached), and the other direction: event, slash command and
 * button requests signed with the signing secret and sent to Bolt's own
 * receiver, as Slack sends them. Test-only: excluded from the build.
 */
import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fakePicture, type FakePlatform, type PlatformMessage, type SendAttempt, type SentRecord } from '@roster/channels/testing';
import { attachFakeSocketMode } from './fake-socket-mode.js';
import { createSlackAdapter, type SlackAdapter } from './slack-adapter.js';

export const fakeSlackBot = { userId: 'UROSTERBOT', botId: 'BROSTER', team: 'T0TEAM' };
const groupChannel = 'C0TEAM';

export interface SignedRequest {
  /** The body as sent. */
  body: string;
  contentType: string;
  /** Seconds since the epoch in the timestamp header (default now). */
  timestamp?: number;
  /** The signing secret to sign with (default the right one). */
  secret?: string;
  retryNum?: number;
}

export interface FakeSlack extends FakePlatform {
  adapter: SlackAdapter;
  readonly apiUrl: string;
  readonly botToken: string;
  readonly signingSecret: string;
  /** Every edit of a sent message the platform accepted, in order, with its time. */
  edits(): Array<{ id: string; text: string; at: number }>;
  /** Every Web API method called, in order. */
  readonly calls: string[];
  /** The text of each message as sent over the wire (mrkdwn, escaped), in order. */
  rawTexts(): string[];
  /** The Block Kit blocks of each message as sent over the wire (none: an empty list), in the order of `rawTexts`. */
  rawBlocks(): unknown[][];
  /** Send a request to the adapter's receiver, signed (or not) as asked; resolves to the HTTP status and body. */
  send(request: SignedRequest): Promise<{ status: number; body: string }>;
  /** An event callback's body, as Slack would post it. */
  eventBody(event: Record<string, unknown>, eventId?: string): string;
  /** Socket Mode: the app-level token apps.connections.open takes. */
  readonly appToken: string;
  /** Socket Mode: send an envelope over the open connection; resolves to the app's acknowledgement. */
  sendEnvelope(type: 'events_api' | 'slash_commands' | 'interactive', payload: unknown): Promise<Record<string, unknown>>;
  /** Socket Mode: connections the app opened so far. */
  socketConnections(): number;
  /** The file ids the bot downloaded (with its token), in order. */
  downloads(): string[];
}

/**
 * Start the fake. `eventsUrl`: send events to a receiver elsewhere (a running
 * gateway) instead of the adapter made here.
 */
export async function startFakeSlack(options: { eventsUrl?: string } = {}): Promise<FakeSlack> {
  const botToken = 'xoxb-test-0000-roster';
  const appToken = 'xapp-1-test-0000-roster';
  const signingSecret = `secret-${randomUUID()}`;
  const calls: string[] = [];
  /** Files people shared, by file id. */
  const files = new Map<string, Uint8Array>();
  const downloads: string[] = [];
  const sent: SentRecord[] = [];
  const edits: Array<{ id: string; text: string; at: number }> = [];
  const attempts: SendAttempt[] = [];
  const pressAnswers: string[] = [];
  const raw: string[] = [];
  const rawBlocks: unknown[][] = [];
  const blocked = new Set<string>();
  let rateLimitNext: number | null = null;
  let clock = 1_700_000_000;
  const nextTs = () => `${++clock}.000100`;
  const dmOf = (userId: string) => `D${userId.slice(1)}`;
  const unescape = (text: string) => text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

  function buttonsOf(blocks: unknown): SentRecord['buttons'] {
    const list = (typeof blocks === 'string' ? JSON.parse(blocks) : (blocks ?? [])) as Array<{ type?: string; elements?: Array<{ action_id?: string; value?: string }> }>;
    return list
      .filter((block) => block.type === 'actions')
      .flatMap((block) => block.elements ?? [])
      .flatMap((element) =>
        element.action_id === 'roster_approve' || element.action_id === 'roster_reject'
          ? [{ approvalId: element.value ?? '', decision: element.action_id === 'roster_approve' ? ('approve' as const) : ('reject' as const) }]
          : [],
      );
  }

  function post(method: string, params: Record<string, unknown>): { status: number; body: unknown; headers?: Record<string, string> } {
    const channel = String(params.channel ?? '');
    // Posting to a person's id goes to the app's one-to-one conversation with them.
    const chatId = channel.startsWith('U') ? dmOf(channel) : channel;
    if (rateLimitNext !== null) {
      const seconds = rateLimitNext;
      rateLimitNext = null;
      attempts.push({ chatId, at: Date.now(), outcome: 'rate-limited' });
      return { status: 429, body: { ok: false, error: 'ratelimited' }, headers: { 'retry-after': String(seconds) } };
    }
    const person = method === 'chat.postEphemeral' ? String(params.user ?? '') : [...blocked].find((user) => dmOf(user) === chatId);
    if (person !== undefined && blocked.has(person)) {
      attempts.push({ chatId, at: Date.now(), outcome: 'blocked' });
      return { status: 200, body: { ok: false, error: 'channel_not_found' } };
    }
    const ts = nextTs();
    raw.push(String(params.text ?? ''));
    // A form-encoded call carries its blocks as JSON text; a JSON call, as a list.
    rawBlocks.push((typeof params.blocks === 'string' ? JSON.parse(params.blocks) : (params.blocks ?? [])) as unknown[]);
    const text = unescape(String(params.text ?? ''));
    if (text.length > 40_000) return { status: 200, body: { ok: false, error: 'msg_too_long' } };
    sent.push({
      id: ts,
      chatId,
      text,
      buttons: buttonsOf(params.blocks),
      at: Date.now(),
      ...(params.thread_ts === undefined ? {} : { threadId: String(params.thread_ts) }),
      ...(method === 'chat.postEphemeral' ? { visibleTo: String(params.user) } : {}),
    });
    attempts.push({ chatId, at: Date.now(), outcome: 'sent' });
    return method === 'chat.postEphemeral' ? { status: 200, body: { ok: true, message_ts: ts } } : { status: 200, body: { ok: true, channel: chatId, ts, message: { ts, text } } };
  }

  function answer(method: string, params: Record<string, unknown>, authorization: string | undefined): { status: number; body: unknown; headers?: Record<string, string> } {
    const token = authorization?.replace(/^Bearer /, '') ?? String(params.token ?? '');
    if (method === 'apps.connections.open') {
      if (token !== appToken) return { status: 200, body: { ok: false, error: 'invalid_auth' } };
      return { status: 200, body: { ok: true, url: `${base.replace('http:', 'ws:')}/socket/${++connections}` } };
    }
    if (token !== botToken) return { status: 200, body: { ok: false, error: 'invalid_auth' } };
    switch (method) {
      case 'auth.test':
        return { status: 200, body: { ok: true, url: 'https://team.slack.test/', team: 'The team', user: 'roster', team_id: fakeSlackBot.team, user_id: fakeSlackBot.userId, bot_id: fakeSlackBot.botId } };
      case 'chat.postMessage':
      case 'chat.postEphemeral':
        return post(method, params);
      case 'chat.update': {
        const record = sent.find((message) => message.id === String(params.ts) && message.chatId === String(params.channel));
        if (record === undefined) return { status: 200, body: { ok: false, error: 'message_not_found' } };
        record.text = unescape(String(params.text ?? record.text));
        edits.push({ id: record.id, text: record.text, at: Date.now() });
        record.buttons = buttonsOf(params.blocks);
        return { status: 200, body: { ok: true, channel: record.chatId, ts: record.id } };
      }
      default:
        return { status: 200, body: { ok: false, error: 'unknown_method' } };
    }
  }

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        response.writeHead(status, { 'content-type': 'application/json', ...headers });
        response.end(JSON.stringify(body));
      };
      const url = new URL(request.url ?? '/', 'http://fake');
      // A shared file's bytes: only with the bot token; without it Slack answers its sign-in page.
      const file = /^\/files-pri\/([A-Z0-9]+)\/download$/.exec(url.pathname);
      if (file !== null) {
        const data = files.get(file[1]!);
        if (request.headers.authorization !== `Bearer ${botToken}`) {
          response.writeHead(200, { 'content-type': 'text/html' });
          response.end('<html><body>Sign in to Slack</body></html>');
          return;
        }
        if (data === undefined) return reply(404, { ok: false, error: 'file_not_found' });
        downloads.push(file[1]!);
        response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(data.byteLength) });
        response.end(Buffer.from(data));
        return;
      }
      if (url.pathname.startsWith('/respond/')) {
        const body = JSON.parse(raw) as { text?: string };
        pressAnswers.push(unescape(body.text ?? ''));
        return reply(200, { ok: true });
      }
      const match = /^\/api\/([A-Za-z.]+)$/.exec(url.pathname);
      if (match === null) return reply(404, { ok: false, error: 'not_found' });
      calls.push(match[1]!);
      const params: Record<string, unknown> = (request.headers['content-type'] ?? '').includes('application/json')
        ? (JSON.parse(raw === '' ? '{}' : raw) as Record<string, unknown>)
        : Object.fromEntries(new URLSearchParams(raw));
      const result = answer(match[1]!, params, request.headers.authorization);
      reply(result.status, result.body, result.headers);
    });
  });
  // Socket Mode: a WebSocket on the same port (RFC 6455, text frames, ping and close), the far side Slack runs.
  let connections = 0;
  const socketMode = attachFakeSocketMode(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const apiUrl = `${base}/api/`;
  const adapter = createSlackAdapter({ botToken, signingSecret, apiUrl, http: { port: 0 } });

  async function send(request: SignedRequest): Promise<{ status: number; body: string }> {
    const eventsUrl = options.eventsUrl ?? adapter.eventsUrl;
    if (eventsUrl === null) throw new Error('the Slack adapter is not listening');
    const timestamp = request.timestamp ?? Math.floor(Date.now() / 1000);
    const signature = `v0=${createHmac('sha256', request.secret ?? signingSecret).update(`v0:${timestamp}:${request.body}`).digest('hex')}`;
    const response = await fetch(eventsUrl, {
      method: 'POST',
      headers: {
        'content-type': request.contentType,
        'x-slack-request-timestamp': String(timestamp),
        'x-slack-signature': signature,
        ...(request.retryNum === undefined ? {} : { 'x-slack-retry-num': String(request.retryNum), 'x-slack-retry-reason': 'http_timeout' }),
      },
      body: request.body,
    });
    return { status: response.status, body: await response.text() };
  }

  function eventBody(event: Record<string, unknown>, eventId = `Ev${randomUUID().replaceAll('-', '').slice(0, 12)}`): string {
    return JSON.stringify({
      token: 'verification-token',
      team_id: fakeSlackBot.team,
      api_app_id: 'A0ROSTER',
      event,
      type: 'event_callback',
      event_id: eventId,
      event_time: clock,
      authorizations: [{ team_id: fakeSlackBot.team, user_id: fakeSlackBot.userId, is_bot: true }],
    });
  }

  const deliveries = new Map<string, { body: string; contentType: string }>();
  async function deliverBody(deliveryId: string, body: string, contentType: string): Promise<void> {
    deliveries.set(deliveryId, { body, contentType });
    const result = await send({ body, contentType });
    if (result.status !== 200) throw new Error(`the receiver answered ${result.status}`);
  }

  function messageEvent(message: PlatformMessage): { event: Record<string, unknown>; ts: string; chatId: string } {
    const ts = nextTs();
    const chatId = message.chat === 'dm' ? dmOf(message.from.id) : groupChannel;
    const text = message.mentionBot === true ? `<@${fakeSlackBot.userId}> ${message.text}` : message.text;
    const event: Record<string, unknown> = {
      type: 'message',
      channel: chatId,
      channel_type: message.chat === 'dm' ? 'im' : 'channel',
      user: message.from.id,
      text: text.replace(/&/g, '&amp;'),
      ts,
      event_ts: ts,
    };
    const attachment = message.attachment ?? (message.image === true ? { kind: 'image' as const, data: fakePicture, mediaType: 'image/png', name: 'photo.png' } : undefined);
    if (attachment !== undefined) {
      const id = `F${String(files.size + 1).padStart(6, '0')}`;
      files.set(id, attachment.data);
      event.subtype = 'file_share';
      event.files = [
        {
          id,
          name: attachment.name ?? (attachment.kind === 'voice' ? 'audio_message.webm' : 'file'),
          mimetype: attachment.mediaType,
          ...(attachment.kind === 'voice' ? { subtype: 'slack_audio' } : {}),
          size: attachment.data.byteLength,
          url_private: `${base}/files-pri/${id}/${attachment.name ?? 'file'}`,
          url_private_download: `${base}/files-pri/${id}/download`,
        },
      ];
    }
    if (message.replyTo !== undefined) {
      event.thread_ts = message.replyTo.id;
      event.parent_user_id = message.replyTo.fromBot ? fakeSlackBot.userId : message.from.id;
    }
    return { event, ts, chatId };
  }

  const fake: FakeSlack = {
    adapter,
    apiUrl,
    botToken,
    signingSecret,
    calls,
    appToken,
    socketConnections: () => connections,
    downloads: () => [...downloads],
    sendEnvelope: (type, payload) => socketMode.sendEnvelope(type, payload),
    rawTexts: () => [...raw],
    rawBlocks: () => rawBlocks.map((blocks) => structuredClone(blocks)),
    send,
    eventBody,
    groupChatId: groupChannel,
    user: (n) => ({ id: `U${String(1000 + n).padStart(6, '0')}`, name: `tess${n}` }),
    dmChatId: (user) => dmOf(user.id),
    async deliver(message) {
      const { event, ts, chatId } = messageEvent(message);
      const eventId = `Ev${clock}`;
      if (message.chat === 'group' && message.mentionBot === true) {
        // Slack sends a mention twice to an app subscribed to both: app_mention, and the channel's message.
        await deliverBody(eventId, eventBody({ ...event, type: 'app_mention' }, eventId), 'application/json');
        await deliverBody(`${eventId}m`, eventBody(event, `${eventId}m`), 'application/json');
      } else {
        await deliverBody(eventId, eventBody(event, eventId), 'application/json');
      }
      return { chatId, messageId: ts, deliveryId: eventId };
    },
    async command(from, chat, words) {
      const chatId = chat === 'dm' ? dmOf(from.id) : groupChannel;
      const triggerId = `${clock++}.trigger`;
      const body = new URLSearchParams({
        token: 'verification-token',
        team_id: fakeSlackBot.team,
        team_domain: 'team',
        channel_id: chatId,
        channel_name: chat === 'dm' ? 'directmessage' : 'general',
        user_id: from.id,
        user_name: from.name,
        command: '/roster',
        text: words,
        api_app_id: 'A0ROSTER',
        response_url: `${base}/respond/${triggerId}`,
        trigger_id: triggerId,
      }).toString();
      await deliverBody(`command:${triggerId}`, body, 'application/x-www-form-urlencoded');
      return { chatId, messageId: `command:${triggerId}`, deliveryId: `command:${triggerId}` };
    },
    async redeliver(delivered) {
      const request = deliveries.get(delivered.deliveryId);
      if (request === undefined) throw new Error(`no delivery ${delivered.deliveryId}`);
      // Slack retries a delivery it thinks was lost: the same body, a new signature, a retry number.
      const result = await send({ ...request, retryNum: 1 });
      if (result.status !== 200) throw new Error(`the receiver answered ${result.status}`);
    },
    async press(from, record, decision) {
      const approvalId = record.buttons[0]?.approvalId ?? '';
      const payload = {
        type: 'block_actions',
        user: { id: from.id, username: from.name, name: from.name, team_id: fakeSlackBot.team },
        api_app_id: 'A0ROSTER',
        token: 'verification-token',
        container: { type: 'message', message_ts: record.id, channel_id: record.chatId, is_ephemeral: false },
        trigger_id: `${clock++}.trigger`,
        team: { id: fakeSlackBot.team, domain: 'team' },
        channel: { id: record.chatId, name: 'directmessage' },
        message: { type: 'message', ts: record.id, text: record.text, blocks: [{ type: 'section', text: { type: 'plain_text', text: record.text } }] },
        response_url: `${base}/respond/press-${clock}`,
        actions: [{ action_id: `roster_${decision}`, block_id: `roster_approval_${approvalId}`, value: approvalId, type: 'button', action_ts: `${clock}.0001` }],
      };
      const result = await send({ body: new URLSearchParams({ payload: JSON.stringify(payload) }).toString(), contentType: 'application/x-www-form-urlencoded' });
      if (result.status !== 200) throw new Error(`the receiver answered ${result.status}`);
    },
    pressAnswers: () => [...pressAnswers],
    sent: () => sent.map((record) => ({ ...record })),
    edits: () => edits.map((edit) => ({ ...edit })),
    attempts: () => [...attempts],
    typing: () => [],
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
      await adapter.stop();
      socketMode.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
