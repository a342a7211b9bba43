import type { RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChannelLogger as RosterLogger } from '@roster/contracts';
import { ChannelError, downloadFile, rosterCommand, splitText, tooLargeText, type ChannelAdapter, type ChannelEvent, type ChannelStartOptions, type ChannelTarget } from '@roster/channels';
import { maxFileBytes, type FileKind, type InboundFile } from '@roster/contracts';
import { App, ErrorCode, HTTPModuleFunctions, HTTPReceiver, SocketModeReceiver } from '@slack/bolt';
import { escapeMrkdwn, fromMrkdwn, toMrkdwn } from './mrkdwn.js';
import { boltLogger, refuseBodiesNotObjects, toChannelError } from './slack-web-api.js';

export interface SlackAdapterOptions {
  /** The bot token (`xoxb-…`). Never logged. */
  botToken: string;
  /** Events over HTTP: the signing secret that verifies each request (SLACK_SIGNING_SECRET). */
  signingSecret?: string;
  /** Socket Mode: the app-level token (`xapp-…`, SLACK_APP_TOKEN); preferred when both are given. */
  appToken?: string;
  /** Another Web API root (SLACK_API_URL), ending in `/`; Slack's own by default. */
  apiUrl?: string;
  /** The bot account's name in Roster's bindings (default `default`). */
  account?: string;
  /**
   * Events over HTTP: where Bolt's receiver listens for `/slack/events`. Without
   * it, nothing listens: mount `requestListener` in another server instead.
   */
  http?: { port: number; host?: string };
  logger?: RosterLogger;
}

/** The Slack adapter: the contract, plus Bolt's HTTP receiver for a server that mounts it. */
export interface SlackAdapter extends ChannelAdapter {
  /** Events over HTTP: Bolt's request listener for `POST /slack/events` (signature checked, URL verification answered). */
  readonly requestListener: RequestListener | null;
  /** Events over HTTP on the adapter's own port: the URL Slack posts to, once started. */
  readonly eventsUrl: string | null;
  /** `http` (signed event requests) or `socket` (Socket Mode). */
  readonly mode: 'http' | 'socket';
}

/** Slack's longest message text; a Block Kit section holds 3,000. */
export const slackTextLimit = 40_000;
export const slackBlockLimit = 3000;
import { slackEventsPath } from './plugin.js';

export { slackEventsPath };

/**
 * The Slack adapter, on @slack/bolt: events over HTTP (Bolt's receiver checks
 * the signature, answers URL verification and refuses requests older than
 * five minutes) or Socket Mode. One-to-one messages (`message.im`) and
 * mentions (`app_mention`), and replies in a thread the bot answered in;
 * answers go in the thread. Slack keeps `/` for slash commands, so Roster's
 * commands are one, `/roster <command>`; in a channel its answer is shown to
 * the person alone. Answers go out in mrkdwn, converted from the Markdown an
 * engine writes, with `&`, `<` and `>` escaped, so an answer can never ping a
 * channel. Approvals carry Block Kit buttons.
 */
export function createSlackAdapter(options: SlackAdapterOptions): SlackAdapter {
  const account = options.account ?? 'default';
  const log = options.logger?.child({ component: 'gateway/slack', account });
  const mode = options.appToken !== undefined ? 'socket' : 'http';
  if (mode === 'http' && options.signingSecret === undefined) {
    throw new ChannelError('failed', 'Slack needs SLACK_SIGNING_SECRET (events over HTTP) or SLACK_APP_TOKEN (Socket Mode) beside SLACK_BOT_TOKEN.');
  }
  const logger = boltLogger(log);
  const clientOptions = {
    ...(options.apiUrl === undefined ? {} : { slackApiUrl: options.apiUrl.endsWith('/') ? options.apiUrl : `${options.apiUrl}/` }),
    // A 429 comes back to the shared code, which waits as asked; other failures are not retried for half an hour.
    rejectRateLimitedCalls: true,
    retryConfig: { retries: 2, factor: 2, minTimeout: 500, maxTimeout: 2000 },
    logger,
  };
  const httpReceiver =
    mode === 'http'
      ? new HTTPReceiver({
          signingSecret: options.signingSecret!,
          endpoints: slackEventsPath,
          // The answer to Slack waits for Bolt's listeners, which only hand the event over: quick, and then it is taken.
          processBeforeResponse: true,
          logger,
          // A signed request Bolt fails on while reading it (a field of the wrong type) is refused as a bad request, not answered 500.
          processEventErrorHandler: async (args) => {
            if (args.response.headersSent || (args.error as { code?: unknown }).code === ErrorCode.AuthorizationError) return HTTPModuleFunctions.defaultProcessEventErrorHandler(args);
            log?.warn({ err: { name: args.error.name, message: args.error.message } }, 'a Slack request could not be read and was refused');
            HTTPModuleFunctions.buildNoBodyResponse(args.response, 400);
            return false;
          },
        })
      : undefined;
  if (httpReceiver !== undefined) httpReceiver.requestListener = refuseBodiesNotObjects(httpReceiver.requestListener);
  const receiver =
    httpReceiver ??
    new SocketModeReceiver({
      appToken: options.appToken!,
      logger,
      // apps.connections.open goes to the same Web API root (Bolt takes it from the installer's options).
      ...(options.apiUrl === undefined ? {} : { installerOptions: { clientOptions: { slackApiUrl: clientOptions.slackApiUrl! } } }),
    });
  const app = new App({ token: options.botToken, receiver, logger, clientOptions, deferInitialization: true });
  const client = app.client;
  const token = options.botToken;
  let bot: { userId: string; botId: string } | undefined;
  let server: Server | undefined;
  let eventsUrl: string | null = null;
  let started = false;

  async function call<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw toChannelError(what, error);
    }
  }

  function conversationId(channel: string): string {
    return account === 'default' ? channel : `${account}:${channel}`;
  }

  /** A Slack message event or mention as Roster's event; null when it is not for the bot. */
  function toEvent(event: SlackMessageEvent, deliveryId: string, kind: 'dm' | 'group', mentioned: boolean): ChannelEvent | null {
    if (bot === undefined || event.user === undefined || event.bot_id !== undefined || event.user === bot.userId) return null;
    if (event.subtype !== undefined && event.subtype !== 'file_share' && event.subtype !== 'thread_broadcast') return null;
    const raw = event.text ?? '';
    const mention = new RegExp(`<@${bot.userId}(?:\\|[^>]*)?>`, 'g');
    const mentionsBot = mentioned || mention.test(raw);
    const text = fromMrkdwn(raw.replace(mention, ' ').replace(/[ \t]{2,}/g, ' ').trim());
    const threaded = event.thread_ts !== undefined && event.thread_ts !== event.ts;
    const replyToBot = threaded && event.parent_user_id === bot.userId;
    const media: ChannelEvent['media'] = (event.files ?? []).map((file) =>
      (file.mimetype ?? '').startsWith('image/') ? 'image' : (file.mimetype ?? '').startsWith('audio/') ? (file.subtype === 'slack_audio' ? 'voice' : 'audio') : (file.mimetype ?? '').startsWith('video/') ? 'video' : 'file',
    );
    const files = event.files ?? [];
    const target: ChannelTarget = { chatId: event.channel };
    if (kind === 'group') target.threadId = event.thread_ts ?? event.ts;
    else {
      target.recipient = event.user;
      if (threaded) target.threadId = event.thread_ts!;
    }
    return {
      inbound: {
        channel: 'slack',
        account,
        conversation: { externalId: conversationId(event.channel), kind },
        sender: { externalId: event.user },
        externalMessageId: event.ts,
        text,
      },
      mentionsBot,
      replyTo: threaded ? event.thread_ts! : null,
      replyToBot,
      media,
      ...(files.length === 0 ? {} : { fetchFiles: (signal: AbortSignal) => fetchFiles(files, media, signal) }),
      target,
      deliveryId,
    };
  }

  /**
   * The files of a message: each `url_private_download`, fetched with the bot
   * token (Slack's files need it), at most `maxFileBytes`; a larger one is
   * refused by the size Slack announced before anything is fetched. Videos
   * and files without an address are skipped.
   */
  async function fetchFiles(files: NonNullable<SlackMessageEvent['files']>, media: ChannelEvent['media'], signal: AbortSignal) {
    const fetched: InboundFile[] = [];
    const skipped: ChannelEvent['media'] = [];
    for (const [index, file] of files.entries()) {
      const url = file.url_private_download ?? file.url_private;
      const mediaType = file.mimetype ?? 'application/octet-stream';
      if (media[index] === 'video' || url === undefined) {
        skipped.push(media[index]!);
        continue;
      }
      const kind: FileKind = mediaType.startsWith('image/') ? 'image' : mediaType.startsWith('audio/') ? 'audio' : 'file';
      if (file.size !== undefined && file.size > maxFileBytes) throw new ChannelError('failed', tooLargeText(kind));
      const data = await downloadFile(url, {
        kind,
        platform: 'Slack',
        headers: { authorization: `Bearer ${token}` },
        signal,
        refusedAsPage: 'Slack did not give the file to Roster: the app needs the files:read scope (reinstall it after adding it).',
      });
      fetched.push({ kind, mediaType, data, ...(file.name === undefined ? {} : { name: file.name }) });
    }
    return { files: fetched, skipped };
  }

  function listen(start: ChannelStartOptions): void {
    app.event('app_mention', async ({ event, body }) => {
      const mention = event as unknown as SlackMessageEvent;
      // In a one-to-one conversation the same message comes as message.im, taken below.
      if (mention.channel.startsWith('D')) return;
      const handed = toEvent(mention, eventId(body), 'group', true);
      if (handed !== null) await start.onMessage(handed);
    });
    app.event('message', async ({ event, body }) => {
      const message = event as unknown as SlackMessageEvent;
      if (message.channel_type === 'im') {
        const handed = toEvent(message, eventId(body), 'dm', false);
        if (handed !== null) await start.onMessage(handed);
        return;
      }
      // In a channel, only a reply in a thread the bot answered in, without a mention (a mention comes as app_mention).
      if (bot === undefined || message.parent_user_id !== bot.userId || (message.text ?? '').includes(`<@${bot.userId}`)) return;
      const handed = toEvent(message, eventId(body), 'group', false);
      if (handed !== null) await start.onMessage(handed);
    });
    app.command('/roster', async ({ command, ack }) => {
      await ack();
      const kind = command.channel_id.startsWith('D') ? 'dm' : 'group';
      const target: ChannelTarget = kind === 'dm' ? { chatId: command.channel_id, recipient: command.user_id } : { chatId: command.channel_id, visibleTo: command.user_id };
      void start.onMessage({
        inbound: {
          channel: 'slack',
          account,
          conversation: { externalId: conversationId(command.channel_id), kind },
          sender: { externalId: command.user_id, ...(command.user_name === undefined || command.user_name === '' ? {} : { displayName: command.user_name }) },
          externalMessageId: `command:${command.trigger_id}`,
          text: rosterCommand(command.text ?? ''),
        },
        mentionsBot: true,
        replyTo: null,
        replyToBot: false,
        media: [],
        target,
        deliveryId: `command:${command.trigger_id}`,
      });
    });
    app.action(/^roster_(approve|reject)$/, async ({ ack, body, action, respond }) => {
      await ack();
      if (body.type !== 'block_actions' || !('value' in action) || typeof action.value !== 'string' || !('action_id' in action)) return;
      const channelId = body.container?.channel_id ?? body.channel?.id;
      const messageTs = body.container?.message_ts ?? body.message?.ts;
      if (channelId === undefined) return;
      const result = await start.onApprovalPress({
        approvalId: action.value,
        decision: action.action_id === 'roster_approve' ? 'approve' : 'reject',
        sender: { externalId: body.user.id, ...(body.user.name === undefined ? {} : { displayName: body.user.name }) },
        target: { chatId: channelId },
      });
      await respond({ response_type: 'ephemeral', replace_original: false, text: toMrkdwn(result.text) });
      if (result.decided && messageTs !== undefined) {
        // The decision replaces the buttons; the text the owner saw stays.
        const shown = (body.message?.blocks ?? []).filter((block: { type?: string }) => block.type === 'section');
        await call('chat.update', () =>
          client.chat.update({
            token,
            channel: channelId,
            ts: messageTs,
            text: toMrkdwn(result.text),
            blocks: [...shown, { type: 'context', elements: [{ type: 'plain_text', text: result.text.slice(0, 2000) }] }],
          }),
        );
      }
    });
    app.error(async (error) => {
      log?.error({ err: { name: error.name, message: error.message, code: error.code } }, 'a Slack event could not be handled');
    });
  }

  async function post(target: ChannelTarget, text: string, blocks?: unknown[]): Promise<{ id: string }> {
    if (target.visibleTo !== undefined) {
      const sent = await call('chat.postEphemeral', () =>
        client.chat.postEphemeral({
          token,
          channel: target.chatId,
          user: target.visibleTo!,
          text,
          ...(target.threadId === undefined ? {} : { thread_ts: target.threadId }),
        }),
      );
      return { id: String(sent.message_ts ?? '') };
    }
    const sent = await call('chat.postMessage', () =>
      client.chat.postMessage({
        token,
        channel: target.chatId,
        text,
        unfurl_links: false,
        unfurl_media: false,
        ...(blocks === undefined ? {} : { blocks: blocks as never }),
        ...(target.threadId === undefined ? {} : { thread_ts: target.threadId }),
      }),
    );
    return { id: String(sent.ts ?? '') };
  }

  return {
    channel: 'slack',
    account,
    mode,
    capabilities: { threads: true, buttons: true, media: true, typing: false, textLimit: slackTextLimit, commandPrefix: '/roster ' },
    get requestListener() {
      return httpReceiver?.requestListener ?? null;
    },
    get eventsUrl() {
      return eventsUrl;
    },

    async start(start) {
      listen(start);
      const auth = await call('auth.test', () => client.auth.test({ token }));
      if (auth.user_id === undefined || auth.bot_id === undefined) throw new ChannelError('failed', 'Slack answered auth.test without a bot user: SLACK_BOT_TOKEN must be a bot token (xoxb-…).');
      bot = { userId: auth.user_id, botId: auth.bot_id };
      await app.init();
      if (mode === 'socket') {
        await app.start();
        started = true;
      } else if (options.http !== undefined) {
        server = (await app.start({ port: options.http.port, host: options.http.host ?? '127.0.0.1' })) as Server;
        started = true;
        const address = server.address() as AddressInfo;
        eventsUrl = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}${slackEventsPath}`;
      }
      log?.info({ mode, bot: auth.user, team: auth.team }, 'Slack bot receiving');
    },

    async stop() {
      if (started) await app.stop();
      started = false;
      server = undefined;
      eventsUrl = null;
    },

    async sendText(target, text) {
      return post(target, toMrkdwn(text));
    },

    async editText(target, messageId, text) {
      await call('chat.update', () => client.chat.update({ token, channel: target.chatId, ts: messageId, text: toMrkdwn(text) }));
    },

    async sendApproval(target, approval) {
      // Block Kit: the whole text in sections of at most 3,000 characters, then the buttons.
      const sections = splitText(approval.text, slackBlockLimit).map((part) => ({ type: 'section', text: { type: 'plain_text', text: part, emoji: false } }));
      const buttons = {
        type: 'actions',
        block_id: `roster_approval_${approval.id}`,
        elements: [
          { type: 'button', action_id: 'roster_approve', text: { type: 'plain_text', text: 'Approve' }, style: 'primary', value: approval.id },
          { type: 'button', action_id: 'roster_reject', text: { type: 'plain_text', text: 'Reject' }, style: 'danger', value: approval.id },
        ],
      };
      // The notification's text is the approval's as written, like the sections: only escaped.
      return post(target, escapeMrkdwn(approval.text), [...sections, buttons]);
    },

    async sendTyping() {
      // Slack shows no typing indicator for bots in conversations.
    },
  };
}

interface SlackMessageEvent {
  type: string;
  subtype?: string;
  channel: string;
  channel_type?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  parent_user_id?: string;
  files?: Array<{ id?: string; name?: string; mimetype?: string; subtype?: string; size?: number; url_private?: string; url_private_download?: string }>;
}

function eventId(body: unknown): string {
  const id = (body as { event_id?: unknown }).event_id;
  return typeof id === 'string' ? id : `event:${JSON.stringify((body as { event?: { ts?: string } }).event?.ts ?? '')}`;
}
