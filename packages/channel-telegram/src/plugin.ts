import { answerWebhook, readJsonBody } from '@roster/channels';
import { defineChannelPlugin, optionalSecret, optionalUrl } from '@roster/contracts';
import type { TelegramAdapter } from './telegram-adapter.js';

/** Where Telegram posts updates in webhook mode. */
export const telegramWebhookPath = '/telegram/webhook';

interface TelegramSettings {
  token: string;
  apiRoot?: string;
  webhookUrl?: string;
}

/** Telegram: a bot token from @BotFather; long polling, or webhook mode behind a public https address. */
export const channelPlugin = defineChannelPlugin<TelegramSettings>({
  name: 'telegram',
  label: 'Telegram',
  summary: 'a bot token from @BotFather',
  environment: {
    TELEGRAM_BOT_TOKEN: {
      schema: optionalSecret(),
      example: '123456:ABC…',
      description: 'A Telegram bot token; the gateway serves Telegram when set.',
      secret: true,
    },
    TELEGRAM_API_ROOT: {
      schema: optionalUrl(['http:', 'https:']),
      example: 'http://127.0.0.1:8081',
      description: 'Another Telegram Bot API server (a self-hosted one). Unset: Telegram’s own, https://api.telegram.org.',
    },
    TELEGRAM_WEBHOOK_URL: {
      schema: optionalUrl(['https:', 'http:']),
      example: 'https://roster.example.com/telegram/webhook',
      description:
        'Webhook mode for Telegram: the public https address Telegram posts updates to, which your proxy sends to this server’s /telegram/webhook. Unset: long polling.',
    },
  },
  credentials: {
    bot_token: { label: 'the bot token from @BotFather', variable: 'TELEGRAM_BOT_TOKEN', option: 'token' },
  },
  webhooks: [
    {
      path: telegramWebhookPath,
      handle(adapter, request, response) {
        const telegram = adapter as TelegramAdapter;
        if (telegram.mode !== 'webhook') return false;
        void readJsonBody(request)
          .then(async (read) => answerWebhook(response, read.ok ? await telegram.handleWebhook({ headers: request.headers, body: read.body }) : read.status))
          .catch(() => answerWebhook(response, 500));
        return true;
      },
    },
  ],
  setup({ environment, stored }) {
    const token = (environment.TELEGRAM_BOT_TOKEN as string | undefined) ?? stored.bot_token;
    if (token === undefined) return { state: 'off', detail: 'not configured (set TELEGRAM_BOT_TOKEN or run roster channel add telegram)' };
    const apiRoot = environment.TELEGRAM_API_ROOT as string | undefined;
    const webhookUrl = environment.TELEGRAM_WEBHOOK_URL as string | undefined;
    return {
      state: 'configured',
      settings: { token, ...(apiRoot === undefined ? {} : { apiRoot }), ...(webhookUrl === undefined ? {} : { webhookUrl }) },
      mode: webhookUrl === undefined ? 'long polling' : `webhook at ${webhookUrl}`,
      exclusive: webhookUrl === undefined,
    };
  },
  async create(settings, host) {
    const { createTelegramAdapter } = await import('./telegram-adapter.js');
    return createTelegramAdapter({
      token: settings.token,
      ...(settings.apiRoot === undefined ? {} : { apiRoot: settings.apiRoot }),
      // The secret Telegram sends with each webhook request: derived from the installation key, so it needs no storing.
      ...(settings.webhookUrl === undefined ? {} : { webhook: { url: settings.webhookUrl, secretToken: host.derive('roster/telegram-webhook/default').toString('base64url') } }),
      logger: host.logger,
    });
  },
  async check(settings, _host, { timeoutMs }) {
    const { checkTelegramToken } = await import('./telegram-adapter.js');
    const check = await checkTelegramToken({ token: settings.token, ...(settings.apiRoot === undefined ? {} : { apiRoot: settings.apiRoot }), ...(timeoutMs === undefined ? {} : { timeoutMs }) });
    return { status: check.ok ? 'ok' : 'fail', detail: check.detail };
  },
});
