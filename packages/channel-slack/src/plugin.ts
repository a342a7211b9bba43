import { answerWebhook } from '@roster/channels';
import { defineChannelPlugin, optionalSecret, optionalUrl } from '@roster/contracts';
import type { SlackAdapter } from './slack-adapter.js';

/** Where Slack posts events over HTTP. */
export const slackEventsPath = '/slack/events';

interface SlackSettings {
  botToken: string;
  appToken?: string;
  signingSecret?: string;
  apiUrl?: string;
}

/** Slack: a bot token, with an app-level token (Socket Mode) or a signing secret (events over HTTP). */
export const channelPlugin = defineChannelPlugin<SlackSettings>({
  name: 'slack',
  label: 'Slack',
  summary: 'a bot token, and an app-level token (Socket Mode) or a signing secret (events over HTTP)',
  environment: {
    SLACK_BOT_TOKEN: {
      schema: optionalSecret(),
      example: 'xoxb-…',
      description: 'A Slack bot token; with SLACK_APP_TOKEN (socket mode) or SLACK_SIGNING_SECRET (events over HTTP).',
      secret: true,
    },
    SLACK_APP_TOKEN: {
      schema: optionalSecret(),
      example: 'xapp-…',
      description: 'A Slack app-level token for socket mode.',
      secret: true,
    },
    SLACK_SIGNING_SECRET: {
      schema: optionalSecret(),
      example: '8f7…',
      description: 'Verifies Slack events delivered over HTTP.',
      secret: true,
    },
    SLACK_API_URL: {
      schema: optionalUrl(['http:', 'https:']),
      example: 'https://slack.com/api/',
      description: 'Another Slack Web API root (a proxy). Unset: Slack’s own.',
    },
  },
  credentials: {
    bot_token: { label: 'the bot token', variable: 'SLACK_BOT_TOKEN', option: 'bot-token', prefix: 'xoxb-' },
    signing_secret: { label: 'the signing secret (events over HTTP)', variable: 'SLACK_SIGNING_SECRET', option: 'signing-secret' },
    app_token: { label: 'the app-level token (Socket Mode)', variable: 'SLACK_APP_TOKEN', option: 'app-token', prefix: 'xapp-' },
  },
  webhooks: [
    {
      path: slackEventsPath,
      handle(adapter, request, response) {
        const listener = (adapter as SlackAdapter).requestListener;
        if (listener === null) return false;
        try {
          listener(request, response);
        } catch {
          answerWebhook(response, 500);
        }
        return true;
      },
    },
  ],
  setup({ environment, stored, serverAddress }) {
    const value = (variable: string, name: string) => (environment[variable] as string | undefined) ?? stored[name];
    const botToken = value('SLACK_BOT_TOKEN', 'bot_token');
    if (botToken === undefined) return { state: 'off', detail: 'not configured (set SLACK_BOT_TOKEN or run roster channel add slack)' };
    const appToken = value('SLACK_APP_TOKEN', 'app_token');
    const signingSecret = value('SLACK_SIGNING_SECRET', 'signing_secret');
    if (appToken === undefined && signingSecret === undefined) {
      return {
        state: 'incomplete',
        detail: 'has a bot token but needs an app-level token (Socket Mode) or a signing secret (events over HTTP): SLACK_APP_TOKEN or SLACK_SIGNING_SECRET, or roster channel add slack',
      };
    }
    const apiUrl = environment.SLACK_API_URL as string | undefined;
    return {
      state: 'configured',
      settings: { botToken, ...(appToken === undefined ? {} : { appToken }), ...(signingSecret === undefined ? {} : { signingSecret }), ...(apiUrl === undefined ? {} : { apiUrl }) },
      mode: appToken !== undefined ? 'Socket Mode' : `events over HTTP at ${serverAddress}${slackEventsPath}`,
      exclusive: appToken !== undefined,
    };
  },
  async create(settings, host) {
    const { createSlackAdapter } = await import('./slack-adapter.js');
    return createSlackAdapter({ ...settings, logger: host.logger });
  },
  async check(settings, _host, { timeoutMs }) {
    const { checkSlackToken } = await import('./slack-web-api.js');
    const check = await checkSlackToken({ botToken: settings.botToken, ...(settings.apiUrl === undefined ? {} : { apiUrl: settings.apiUrl }), ...(timeoutMs === undefined ? {} : { timeoutMs }) });
    return { status: check.ok ? 'ok' : 'fail', detail: check.detail };
  },
});
