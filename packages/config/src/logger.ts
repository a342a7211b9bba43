import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import type { Config } from './env.js';

export type { Logger } from 'pino';

/**
 * Paths pino censors wherever they occur in a log line: tokens, keys,
 * passwords and authorization headers. A component never has to remember.
 */
export const redactedPaths = [
  'password',
  'token',
  'apiKey',
  'secret',
  'authorization',
  'cookie',
  'connectionString',
  'redisUrl',
  '*.password',
  '*.token',
  '*.apiKey',
  '*.secret',
  '*.authorization',
  '*.cookie',
  '*.connectionString',
  '*.redisUrl',
  'headers.authorization',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers.cookie',
  'config.DATABASE_URL',
  'config.REDIS_URL',
  'config.ROSTER_SECRET_KEY',
  'config.OPENAI_API_KEY',
  'config.ANTHROPIC_API_KEY',
  // A channel's variables are its plugin's, tokens among them: none is logged.
  'config.channels.*',
  '*.botToken',
  '*.appToken',
  '*.signingSecret',
  '*.accessToken',
];

/**
 * The product's logger. Components take `logger.child({ component: 'gateway/telegram' })`.
 * Lines go to stderr so that commands can print their results on stdout.
 */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>, destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
    level: config.LOG_LEVEL,
    redact: { paths: redactedPaths, censor: '[redacted]' },
    base: undefined,
  };
  return pino(options, destination ?? pino.destination(2));
}
