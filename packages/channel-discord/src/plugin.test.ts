import { createLogger, parseConfig } from '@roster/config';
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

  it('reads DISCORD_SHARDS as a shard count from 1 to 1024, refuses anything else, and takes it instead of asking Discord', async () => {
    const channels = (env: Record<string, string>) => parseConfig(env, channelPlugin.environment).channels;
    expect(channels({}).DISCORD_SHARDS).toBeUndefined();
    expect(channels({ DISCORD_SHARDS: ' 2 ' }).DISCORD_SHARDS).toBe(2);
    for (const value of ['0', '1.5', 'two', '1025', '-1']) {
      let issues: Array<{ variable: string; message: string }> = [];
      try {
        channels({ DISCORD_SHARDS: value });
      } catch (error) {
        issues = [...(error as ConfigError).issues];
      }
      expect(issues.map((issue) => issue.variable), value).toEqual(['DISCORD_SHARDS']);
    }
    const sources = { environment: { DISCORD_SHARDS: 3 }, stored: { bot_token: 'MTA.token' }, boundRooms: [], serverAddress: 'http://127.0.0.1:8420' };
    const setup = channelPlugin.setup(sources);
    expect(setup).toMatchObject({ state: 'configured', settings: { shards: 3 }, mode: 'gateway, 3 shards' });
    // Set, the count is the setting's: Discord is not asked (no address would answer here).
    if (setup.state !== 'configured') throw new Error('not configured');
    const host = { logger: createLogger(parseConfig({ LOG_LEVEL: 'silent' })), derive: () => Buffer.alloc(32), services: {} };
    expect(await channelPlugin.shards!({ ...setup.settings, apiUrl: 'http://127.0.0.1:9' }, host)).toBe(3);
  });

  it('serves the bound channels of the environment over the stored ones, and checks an id’s form', () => {
    const sources = { environment: {}, stored: { bot_token: 'MTA.token' }, boundRooms: ['1234567890123456789'], serverAddress: 'http://127.0.0.1:8420' };
    expect(channelPlugin.setup(sources)).toMatchObject({ state: 'configured', settings: { boundChannels: ['1234567890123456789'] } });
    expect(channelPlugin.setup({ ...sources, environment: { DISCORD_CHANNELS: ['2345678901234567890'] } })).toMatchObject({ settings: { boundChannels: ['2345678901234567890'] } });
    expect(channelPlugin.boundRooms!.check('1234567890123456789')).toBeNull();
    expect(channelPlugin.boundRooms!.check('#general')).toMatch(/17 to 20 digits/);
  });
});
