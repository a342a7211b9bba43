export { checkSlackToken, createSlackAdapter, slackBlockLimit, slackEventsPath, slackTextLimit, toChannelError, type SlackAdapter, type SlackAdapterOptions } from './slack-adapter.js';
export { escapeMrkdwn, fromMrkdwn, toMrkdwn } from './mrkdwn.js';
export { channelPlugin } from './plugin.js';
