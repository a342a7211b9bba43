export { createSlackAdapter, slackBlockLimit, slackEventsPath, slackTextLimit, type SlackAdapter, type SlackAdapterOptions } from './slack-adapter.js';
export { checkSlackToken, toChannelError } from './slack-web-api.js';
export { escapeMrkdwn, fromMrkdwn, toMrkdwn } from './mrkdwn.js';
export { channelPlugin } from './plugin.js';
