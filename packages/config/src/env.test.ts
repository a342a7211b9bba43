import { Writable } from 'node:stream';
import { ConfigError } from '@roster/errors';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseConfig, redactConfig } from './env.js';
import { createLogger } from './logger.js';

function issuesFor(env: Record<string, string>): Array<{ variable: string; message: string }> {
  try {
    parseConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return [...(error as ConfigError).issues];
  }
  throw new Error('expected the configuration to be refused');
}

describe('parseConfig', () => {
  it('gives sensible defaults for an empty environment', () => {
    const config = parseConfig({});
    expect(config).toMatchObject({
      HOST: '127.0.0.1',
      PORT: 8420,
      REDIS_URL: 'redis://127.0.0.1:6379',
      LOG_LEVEL: 'info',
      ROSTER_ENGINE: 'offline',
      ROSTER_EMBEDDER: 'hashing',
      PRIVACY: 'standard',
      channels: {},
    });
    expect(config.DATABASE_URL).toBeUndefined();
    // Unset: no stacks leave the process; only an explicit development shows them.
    expect(config.NODE_ENV).toBeUndefined();
    expect(config.ROSTER_DATA_DIR).toMatch(/\.roster$/);
  });

  it('accepts valid values of every kind', () => {
    const config = parseConfig({
      DATABASE_URL: 'postgres://roster:pw@db:5432/roster',
      PORT: '9000',
      HOST: '0.0.0.0',
      ROSTER_ENGINE: 'openai-compatible:http://127.0.0.1:11434/v1#llama3.1',
      ROSTER_SECRET_KEY: 'ab'.repeat(32),
    });
    expect(config.PORT).toBe(9000);
    expect(config.DATABASE_URL).toBe('postgres://roster:pw@db:5432/roster');
  });

  it('reads TRUST_PROXY as none unless it is set, and ROSTER_ALLOWED_HOSTS as a list', () => {
    const unset = parseConfig({});
    expect(unset.TRUST_PROXY).toBe(false);
    expect(unset.ROSTER_ALLOWED_HOSTS).toEqual([]);
    expect(parseConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }).TRUST_PROXY).toEqual(['loopback', '10.0.0.0/8']);
    expect(parseConfig({ TRUST_PROXY: '1' }).TRUST_PROXY).toBe(1);
    expect(parseConfig({ TRUST_PROXY: 'true' }).TRUST_PROXY).toBe(true);
    expect(parseConfig({ ROSTER_ALLOWED_HOSTS: 'Roster.Example.com, [::1]' }).ROSTER_ALLOWED_HOSTS).toEqual(['roster.example.com', '[::1]']);
    expect(issuesFor({ TRUST_PROXY: 'everyone' }).map((issue) => issue.variable)).toEqual(['TRUST_PROXY']);
    expect(issuesFor({ TRUST_PROXY: '10.0.0.0/99' }).map((issue) => issue.variable)).toEqual(['TRUST_PROXY']);
    expect(issuesFor({ ROSTER_ALLOWED_HOSTS: 'a b' }).map((issue) => issue.variable)).toEqual(['ROSTER_ALLOWED_HOSTS']);
  });

  it('parses the channels’ own variables with their schemas, reports a bad one by name, and never echoes a secret', () => {
    const channelVariables = {
      EXAMPLE_ROOMS: { schema: z.string().regex(/^[0-9]+(,[0-9]+)*$/).optional(), example: '123,456', description: 'rooms' },
      EXAMPLE_TOKEN: { schema: z.string().min(8).optional(), example: 'abcdefgh', description: 'a token', secret: true },
    };
    expect(parseConfig({}, channelVariables).channels).toEqual({});
    expect(parseConfig({ EXAMPLE_ROOMS: '1,2', EXAMPLE_TOKEN: 'abcdefghij' }, channelVariables).channels).toEqual({ EXAMPLE_ROOMS: '1,2', EXAMPLE_TOKEN: 'abcdefghij' });
    // Without the channels' variables given, none is read.
    expect(parseConfig({ EXAMPLE_ROOMS: '1,2' }).channels).toEqual({});
    let issues: Array<{ variable: string; message: string }> = [];
    try {
      parseConfig({ EXAMPLE_ROOMS: 'general', EXAMPLE_TOKEN: 'short' }, channelVariables);
    } catch (error) {
      issues = [...(error as ConfigError).issues];
    }
    expect(issues.map((issue) => issue.variable)).toEqual(['EXAMPLE_ROOMS', 'EXAMPLE_TOKEN']);
    expect(issues[0]!.message).toMatch(/"general".*expected 123,456/);
    expect(issues[1]!.message).not.toContain('short');
    expect(redactConfig(parseConfig({ EXAMPLE_TOKEN: 'abcdefghij' }, channelVariables))).toMatchObject({ EXAMPLE_TOKEN: '[set]' });
  });

  const invalid: Array<[string, string, RegExp]> = [
    ['PORT', 'eighty', /expected 8420/],
    ['PORT', '70000', /expected 8420/],
    ['HOST', 'bad host', /expected 127\.0\.0\.1/],
    ['LOG_LEVEL', 'loud', /expected info/],
    ['NODE_ENV', 'staging', /expected production/],
    ['DATABASE_URL', 'mysql://localhost/roster', /expected postgres:\/\//],
    ['REDIS_URL', 'http://127.0.0.1:6379', /expected redis:\/\//],
    ['ROSTER_SECRET_KEY', 'too-short', /64 or more hex digits, or base64 of 32 or more bytes/],
    ['ROSTER_SECRET_KEY', 'ab'.repeat(16), /64 or more hex digits/],
    ['ROSTER_ENGINE', 'gpt-4', /offline, openai:/],
    ['ROSTER_EMBEDDER', 'magic', /hashing/],
    ['PRIVACY', 'max', /strict/],
    ['OPENAI_BASE_URL', 'not a url', /https:\/\/api\.openai\.com/],
  ];

  it.each(invalid)('refuses %s=%s with an error that names it', (variable, value, expected) => {
    const issues = issuesFor({ [variable]: value });
    expect(issues).toHaveLength(1);
    expect(issues[0]!.variable).toBe(variable);
    expect(issues[0]!.message).toMatch(expected);
  });

  it('reports every invalid variable at once, each on its own line', () => {
    let message = '';
    try {
      parseConfig({ PORT: 'x', LOG_LEVEL: 'loud', HOST: 'a b' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message.split('\n')).toEqual([
      'Invalid configuration:',
      expect.stringMatching(/^ {2}HOST: the value "a b" is not valid; expected 127\.0\.0\.1$/),
      expect.stringMatching(/^ {2}PORT: the value "x" is not valid; expected 8420$/),
      expect.stringMatching(/^ {2}LOG_LEVEL: the value "loud" is not valid; expected info$/),
    ]);
  });

  it('never echoes a secret value in its error', () => {
    const issues = issuesFor({ ROSTER_SECRET_KEY: 'hunter2-secret', DATABASE_URL: 'mysql://u:topsecret@h/db' });
    const text = issues.map((issue) => issue.message).join('\n');
    expect(issues.map((issue) => issue.variable).sort()).toEqual(['DATABASE_URL', 'ROSTER_SECRET_KEY']);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('topsecret');
  });

  it('requires a secret key in production', () => {
    const issues = issuesFor({ NODE_ENV: 'production' });
    expect(issues).toEqual([{ variable: 'ROSTER_SECRET_KEY', message: expect.stringMatching(/required when NODE_ENV=production/) }]);
    expect(parseConfig({ NODE_ENV: 'production', ROSTER_SECRET_KEY: 'k'.repeat(44) }).NODE_ENV).toBe('production');
  });
});

describe('secrets stay out of logs', () => {
  it('masks secrets and URL passwords in the printable config', () => {
    const config = parseConfig({
      DATABASE_URL: 'postgres://roster:db-password@db:5432/roster',
      OPENAI_API_KEY: 'sk-live-123456',
      ROSTER_SECRET_KEY: 's'.repeat(44),
    });
    const shown = JSON.stringify(redactConfig(config));
    expect(shown).not.toContain('db-password');
    expect(shown).not.toContain('sk-live-123456');
    expect(shown).not.toContain('s'.repeat(32));
    expect(shown).toContain('db:5432');
    expect(shown).toContain('"PORT":8420');
  });

  it('censors tokens, keys and authorization headers in log lines', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = createLogger({ LOG_LEVEL: 'info' }, sink).child({ component: 'gateway/telegram' });
    logger.info({ token: '123:bot-token', headers: { authorization: 'Bearer abc.def' }, channel: { apiKey: 'sk-zzz' }, chat: 42 }, 'sent');

    const line = lines.join('');
    expect(line).toContain('"chat":42');
    expect(line).toContain('gateway/telegram');
    expect(line).not.toContain('bot-token');
    expect(line).not.toContain('abc.def');
    expect(line).not.toContain('sk-zzz');
  });
});
