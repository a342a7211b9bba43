import { ConfigError } from '@roster/errors';
import { describe, expect, it } from 'vitest';
import { parseConfig, redactConfig } from './env.js';
import { parseRedisUrl } from './redis-url.js';

describe('REDIS_URL', () => {
  it('reads one server, with its credentials, database and TLS', () => {
    expect(parseRedisUrl('rediss://user:p%40ss@cache.example:6380/2')).toEqual({ kind: 'server', host: 'cache.example', port: 6380, username: 'user', password: 'p@ss', db: 2, tls: true });
    expect(parseRedisUrl('redis://127.0.0.1')).toEqual({ kind: 'server', host: '127.0.0.1', port: 6379, tls: false });
  });

  it('reads a cluster: the first node in the host, the others as node=', () => {
    expect(parseRedisUrl('redis+cluster://:secret@10.0.0.1:7000?node=10.0.0.2:7001&node=[::1]:7002')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: '::1', port: 7002 },
      ],
      password: 'secret',
      tls: false,
    });
    expect(parseRedisUrl('rediss+cluster://redis.internal').kind).toBe('cluster');
  });

  it.each([
    ['http://127.0.0.1:6379', /protocol/],
    ['redis+cluster://127.0.0.1:7000/1', /database 0/],
    ['redis+cluster://127.0.0.1:7000?node=127.0.0.1', /not host:port/],
    ['redis+cluster://127.0.0.1:7000?node=127.0.0.1:99999', /not host:port/],
    ['redis://127.0.0.1/x', /database number/],
  ])('refuses %s', (value, reason) => {
    expect(() => parseRedisUrl(value)).toThrow(reason);
    expect(() => parseConfig({ REDIS_URL: value })).toThrow(ConfigError);
  });

  it('takes a cluster with a braced queue prefix and refuses one without braces, naming the prefix', () => {
    const url = 'redis+cluster://:secret@10.0.0.1:7000?node=10.0.0.2:7001';
    const config = parseConfig({ REDIS_URL: url });
    expect(config.ROSTER_QUEUE_PREFIX).toBe('{roster}');
    expect(redactConfig(config).REDIS_URL).not.toContain('secret');
    expect(parseConfig({ REDIS_URL: url, ROSTER_QUEUE_PREFIX: '{team-a}' }).ROSTER_QUEUE_PREFIX).toBe('{team-a}');
    let issues: readonly { variable: string; message: string }[] = [];
    try {
      parseConfig({ REDIS_URL: url, ROSTER_QUEUE_PREFIX: 'team-a' });
    } catch (error) {
      issues = (error as ConfigError).issues;
    }
    expect(issues).toEqual([{ variable: 'ROSTER_QUEUE_PREFIX', message: expect.stringMatching(/braces.*\{team-a\}/) }]);
    // The same prefix is fine on one server.
    expect(parseConfig({ REDIS_URL: 'redis://127.0.0.1:6379', ROSTER_QUEUE_PREFIX: 'team-a' }).ROSTER_QUEUE_PREFIX).toBe('team-a');
  });
});
