import { channelNamePattern } from '@roster/contracts';
import { describe, expect, it } from 'vitest';
import { channelNames, channelPlugins, channelVariables, findChannelPlugin } from './index.js';

describe('the channel registry', () => {
  it('holds every channel package among its dependencies, each named once, with its variables', () => {
    expect(channelNames).toEqual(expect.arrayContaining(['discord', 'slack', 'telegram', 'whatsapp']));
    expect(new Set(channelNames).size).toBe(channelNames.length);
    for (const plugin of channelPlugins) {
      expect(plugin.name).toMatch(channelNamePattern);
      for (const field of Object.values(plugin.credentials)) expect(Object.keys(plugin.environment)).toContain(field.variable);
    }
    expect(Object.keys(channelVariables)).toEqual(expect.arrayContaining(['TELEGRAM_BOT_TOKEN', 'SLACK_SIGNING_SECRET', 'DISCORD_CHANNELS', 'WHATSAPP_ENABLED']));
    expect(findChannelPlugin('telegram')?.label).toBe('Telegram');
    expect(findChannelPlugin('web')).toBeUndefined();
  });

  it('tells apart off, incomplete and configured from the sources alone', () => {
    const slack = findChannelPlugin('slack')!;
    const sources = { environment: {}, stored: {}, boundRooms: [], serverAddress: 'http://127.0.0.1:8420' };
    expect(slack.setup(sources).state).toBe('off');
    expect(slack.setup({ ...sources, stored: { bot_token: 'xoxb-1' } })).toMatchObject({ state: 'incomplete' });
    // An environment variable wins over a stored value.
    expect(slack.setup({ ...sources, environment: { SLACK_BOT_TOKEN: 'xoxb-env', SLACK_SIGNING_SECRET: 's' }, stored: { bot_token: 'xoxb-stored' } })).toMatchObject({
      state: 'configured',
      settings: { botToken: 'xoxb-env', signingSecret: 's' },
      mode: 'events over HTTP at http://127.0.0.1:8420/slack/events',
    });
  });
});
