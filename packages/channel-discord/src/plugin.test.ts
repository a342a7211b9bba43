import { parseConfig } from '@roster/config';
import { ConfigError } from '@roster/errors';
import { describe, expect, it } from 'vitest';
import { channelPlugin } from './plugin.js';

describe('the Discord plugin', () => {
  it('reads DISCORD_CHANNELS as a list of channel ids, and refuses what is not one', () => {
    const channels = (env: Record<string, string>) => parseConfig(env, channelPlugin.environment).channels;
    expect(channels({}).DISCORD_CHANNELS).toBeUndefined();
    expect(channels({ DISCORD_CHANNELS: ' 1234567890123456789, 2345678901234567890,1234567890123456789 ' }).DISCORD_CHANNELS).toEqual(['1234567890123456789', '2345678901234567890']);
    for (const value of ['general', '12345', '1234567890123456789,#general', ',']) {
      let issues: Array<{ variable: string; message: string }> = [];
      try {
        channels({ DISCORD_CHANNELS: value });
      } catch (error) {
        issues = [...(error as ConfigError).issues];
      }
      expect(issues.map((issue) => issue.variable), value).toEqual(['DISCORD_CHANNELS']);
      expect(issues[0]!.message).toMatch(/expected 1234567890123456789,2345678901234567890/);
    }
  });

  it('serves the bound channels of the environment over the stored ones, and checks an id’s form', () => {
    const sources = { environment: {}, stored: { bot_token: 'MTA.token' }, boundRooms: ['1234567890123456789'], serverAddress: 'http://127.0.0.1:8420' };
    expect(channelPlugin.setup(sources)).toMatchObject({ state: 'configured', settings: { boundChannels: ['1234567890123456789'] } });
    expect(channelPlugin.setup({ ...sources, environment: { DISCORD_CHANNELS: ['2345678901234567890'] } })).toMatchObject({ settings: { boundChannels: ['2345678901234567890'] } });
    expect(channelPlugin.boundRooms!.check('1234567890123456789')).toBeNull();
    expect(channelPlugin.boundRooms!.check('#general')).toMatch(/17 to 20 digits/);
  });
});
