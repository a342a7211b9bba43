export { checkSlackToken, createSlackAdapter, slackBlockLimit, slackEventsPath, slackTextLimit, toChannelError, toMrkdwn, type SlackAdapter, type SlackAdapterOptions } from './slack-adapter.js';
