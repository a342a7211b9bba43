import { isIP } from 'node:net';
import path from 'node:path';
import { ConfigError, type ConfigIssue } from '@roster/errors';
import { optionalSecret, optionalUrl, type VariableSpec } from '@roster/contracts';
import { z } from 'zod';
import { installationKeyFormat, parseInstallationKey } from './installation-key.js';
import { isRedisUrl, parseRedisUrl } from './redis-url.js';

/** How one environment variable is read, documented and shown. */
const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const port = z.coerce.number().int().min(1).max(65_535);

/** The names proxy-addr knows for address ranges, beside addresses and CIDR blocks. */
const proxyRangeNames = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, an address/prefix, or a range name (`loopback`): one entry of TRUST_PROXY. */
function isProxyAddress(entry: string): boolean {
  if (proxyRangeNames.has(entry)) return true;
  const [address = '', prefix, extra] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d{1,3}$/.test(prefix) && bits <= (version === 4 ? 32 : 128);
}

/**
 * Which proxies' X-Forwarded-For, -Proto and -Host headers to believe: a
 * comma-separated list of their addresses, CIDR blocks or `loopback`; a
 * number of hops; or `true` (every proxy: only when nothing else can reach
 * the port). Unset: none, so a header a client wrote changes nothing.
 */
const trustProxy = z
  .string()
  .trim()
  .optional()
  .refine((value) => {
    if (value === undefined || value === '' || value === 'true' || value === 'false') return true;
    if (/^\d{1,2}$/.test(value)) return true;
    return value.split(',').every((entry) => isProxyAddress(entry.trim()));
  })
  .transform((value): boolean | number | string[] => {
    if (value === undefined || value === '' || value === 'false') return false;
    if (value === 'true') return true;
    if (/^\d{1,2}$/.test(value)) return Number(value);
    return value.split(',').map((entry) => entry.trim());
  });

/** Host names the server answers to beyond its own address and the loopback names. */
const allowedHosts = z
  .string()
  .trim()
  .optional()
  .refine((value) => value === undefined || value.split(',').every((entry) => /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)$/.test(entry.trim())))
  .transform((value) => (value === undefined || value === '' ? [] : value.split(',').map((entry) => entry.trim().toLowerCase())));

/**
 * Every environment variable Roster reads. Nothing else in the product reads
 * `process.env`: this table is parsed once at start and passed down.
 */
export const environment = {
  NODE_ENV: {
    schema: z.enum(['development', 'production', 'test']).optional(),
    example: 'production',
    description: 'Only development shows error stacks in HTTP answers; unset, production and test do not. production requires ROSTER_SECRET_KEY.',
  },
  DATABASE_URL: {
    schema: optionalUrl(['postgres:', 'postgresql:']),
    example: 'postgres://roster:secret@127.0.0.1:5432/roster',
    description: 'A server Postgres with pgvector 0.8 or newer. Unset: the embedded database in ROSTER_DATA_DIR.',
    secret: true,
  },
  REDIS_URL: {
    schema: z.string().trim().refine(isRedisUrl).default('redis://127.0.0.1:6379'),
    example: 'redis://127.0.0.1:6379',
    description:
      'Redis for the job queues. A Redis Cluster: redis+cluster://host:port?node=host:port (rediss+cluster:// with TLS), with a ROSTER_QUEUE_PREFIX in braces. `roster start` starts a private redis-server in the data folder when a single Redis here is not reachable.',
    secret: true,
  },
  ROSTER_DATA_DIR: {
    schema: z.string().trim().min(1).default('./.roster').transform((value) => path.resolve(value)),
    example: './.roster',
    description: 'Where the embedded database, a private Redis and other local files live.',
  },
  HOST: {
    schema: z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9.:_-]+$/)
      .default('127.0.0.1'),
    example: '127.0.0.1',
    description: 'The address the server listens on. Keep the loopback default unless a proxy with TLS stands in front.',
  },
  PORT: {
    schema: port.default(8420),
    example: '8420',
    description: 'The HTTP port of the server (web page, API, health, Bull Board).',
  },
  TRUST_PROXY: {
    schema: trustProxy,
    example: 'loopback, 10.0.0.5, 10.0.0.0/8 or 1',
    description:
      'The proxies whose X-Forwarded-* headers are believed (addresses, CIDR blocks, loopback, a hop count, or true). Unset: none.',
  },
  ROSTER_ALLOWED_HOSTS: {
    schema: allowedHosts,
    example: 'roster.example.com',
    description: 'More host names the server answers to (comma-separated), beyond HOST, localhost, 127.0.0.1 and [::1].',
  },
  LOG_LEVEL: {
    schema: z.enum(logLevels).default('info'),
    example: 'info',
    description: `One of ${logLevels.join(', ')}.`,
  },
  LOG_FORMAT: {
    schema: z.enum(['json', 'pretty']).optional(),
    example: 'json',
    description: 'json (one object a line) or pretty (short lines for a person). Unset: pretty when stderr is a terminal, json otherwise.',
  },
  ROSTER_SECRET_KEY: {
    schema: optionalSecret().refine((value) => value === undefined || parseInstallationKey(value) !== null),
    example: installationKeyFormat,
    description:
      'The installation key: it keys tombstones and the audit chain (and web sessions, stored channel credentials). ' +
      'Unset: the key file secret.key in ROSTER_DATA_DIR, made on first use; a server database (DATABASE_URL) needs it set. ' +
      'Required when NODE_ENV=production.',
    secret: true,
  },
  ROSTER_ENGINE: {
    schema: z
      .string()
      .trim()
      .regex(/^(offline|openai:.+|anthropic:.+|openai-compatible:https?:\/\/[^#\s]+#.+)$/)
      .default('offline'),
    example: 'offline, openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, openai-compatible:http://127.0.0.1:11434/v1#llama3.1',
    description: 'The engine new agents get when none is named.',
  },
  ROSTER_EMBEDDER: {
    schema: z
      .string()
      .trim()
      .regex(/^(hashing(-\d{2,4})?|ollama:.+|openai:.+|openai-compatible:https?:\/\/[^#\s]+#.+)$/)
      .default('hashing'),
    example: 'hashing, ollama:nomic-embed-text, openai:text-embedding-3-small',
    description: 'The embedder for memory search. The hashing embedder needs no model.',
  },
  ROSTER_JUDGE_ENGINE: {
    schema: z
      .string()
      .trim()
      .regex(/^(openai:.+|anthropic:.+|openai-compatible:https?:\/\/[^#\s]+#.+)$/)
      .optional()
      .or(z.literal('').transform(() => undefined)),
    example: 'openai:gpt-4o-mini',
    description: 'The engine that judges nightly mirror replays. Unset: each agent’s own engine (the offline engine cannot judge).',
  },
  ROSTER_NIGHTLY_HOUR: {
    schema: z.coerce.number().int().min(0).max(23).default(3),
    example: '3',
    description: 'The local hour of the nightly jobs (fade, harvest, review, mirror).',
  },
  ROSTER_TIMEZONE: {
    schema: z
      .string()
      .trim()
      .refine((zone) => {
        try {
          new Intl.DateTimeFormat('en', { timeZone: zone });
          return true;
        } catch {
          return false;
        }
      })
      .optional(),
    example: 'Europe/Rome',
    description: 'The time zone of the nightly schedule (an IANA name). Unset: the machine’s own.',
  },
  ROSTER_IDLE_MINUTES: {
    schema: z.coerce.number().min(1).max(10_080).default(30),
    example: '30',
    description: 'How long a conversation is quiet before facts are extracted from it and its episode is written.',
  },
  ROSTER_VACUUM_MINUTES: {
    schema: z.coerce.number().int().min(1).max(10_080).default(60),
    example: '60',
    description: 'How often the worker vacuums the embedded database, which runs no autovacuum (a server Postgres vacuums itself).',
  },
  ROSTER_BACKUP_DIR: {
    schema: z
      .string()
      .trim()
      .optional()
      .transform((value) => (value === undefined || value === '' ? undefined : path.resolve(value))),
    example: '/var/backups/roster',
    description: 'A folder for the worker’s nightly backup (sealed with the installation key, mode 600), taken at the nightly hour. Unset: no nightly backup.',
  },
  ROSTER_BACKUP_KEEP: {
    schema: z.coerce.number().int().min(1).max(365).default(7),
    example: '7',
    description: 'How many nightly backups are kept in ROSTER_BACKUP_DIR; the oldest beyond it are removed.',
  },
  ROSTER_JOB_LOCK_SECONDS: {
    schema: z.coerce.number().int().min(1).max(3600).default(30),
    example: '30',
    description: 'How long a running job’s lock lasts: a worker that dies mid-job has its job taken up again after about this long.',
  },
  ROSTER_QUEUE_PREFIX: {
    schema: z
      .string()
      .trim()
      .regex(/^(\{[A-Za-z0-9_.:-]{1,62}\}|[A-Za-z0-9_.:-]{1,64})$/)
      .default('{roster}'),
    example: '{roster}',
    description:
      'The Redis key prefix of the job queues; installations sharing a Redis need different ones. In braces (the default), every queue key hashes to one slot, as a Redis Cluster needs.',
  },
  PRIVACY: {
    schema: z.enum(['standard', 'strict']).default('standard'),
    example: 'strict',
    description: 'strict keeps memory-bearing calls on local engines and embedders.',
  },
  OPENAI_API_KEY: {
    schema: optionalSecret(),
    example: 'sk-…',
    description: 'Key for openai: engines and embedders.',
    secret: true,
  },
  OPENAI_BASE_URL: {
    schema: optionalUrl(['http:', 'https:']),
    example: 'https://api.openai.com/v1',
    description: 'Another address for the OpenAI API (a proxy).',
  },
  ANTHROPIC_API_KEY: {
    schema: optionalSecret(),
    example: 'sk-ant-…',
    description: 'Key for anthropic: engines.',
    secret: true,
  },
  OLLAMA_URL: {
    schema: optionalUrl(['http:', 'https:']),
    example: 'http://127.0.0.1:11434',
    description: 'Where Ollama listens, for ollama: embedders.',
  },
  METRICS_PORT: {
    schema: port.optional(),
    example: '9464',
    description:
      'Serve this process’s Prometheus metrics at GET /metrics on 127.0.0.1 at this port, without sign-in (loopback only). Unset: only GET /metrics on PORT, for an owner’s session or API token. Each process of a machine needs its own.',
  },
  GATEWAY_PORT: {
    schema: port.default(8421),
    example: '8421',
    description:
      'Where a gateway running without the server (roster gateway) listens for platforms’ webhooks (POST /slack/events, /telegram/webhook, on HOST). Under roster start they arrive on PORT.',
  },
} satisfies Record<string, VariableSpec<unknown>>;

export type EnvironmentVariable = keyof typeof environment;

/** The parsed environment, as every part of Roster receives it. */
export type Config = {
  readonly [K in EnvironmentVariable]: z.output<(typeof environment)[K]['schema']>;
} & {
  /**
   * The registered channels' own variables (`TELEGRAM_BOT_TOKEN`), parsed by
   * their plugins' schemas with the rest: each plugin reads its own.
   */
  readonly channels: Readonly<Record<string, unknown>>;
};

/** The names of every variable Roster reads. */
export const environmentVariables = Object.keys(environment) as EnvironmentVariable[];

/** The variables whose values must never be shown. */
export const secretVariables: ReadonlySet<EnvironmentVariable> = new Set(
  environmentVariables.filter((name) => (environment[name] as VariableSpec<unknown>).secret === true),
);

/** Documentation rows for the README and `--help`: Roster's variables, then the channels' (`extra`). */
export function describeEnvironment(extra: Readonly<Record<string, VariableSpec<unknown>>> = {}): Array<{ variable: string; example: string; description: string; secret: boolean }> {
  const specs: Record<string, VariableSpec<unknown>> = { ...(environment as Record<string, VariableSpec<unknown>>), ...extra };
  return Object.entries(specs).map(([variable, spec]) => ({ variable, example: spec.example, description: spec.description, secret: spec.secret === true }));
}

/**
 * Parse the environment once. Every invalid variable is reported, each with
 * its own line naming the variable and what a valid value looks like; secret
 * values are never echoed.
 */
export function parseConfig(source: Readonly<Record<string, string | undefined>>, channelVariables: Readonly<Record<string, VariableSpec<unknown>>> = {}): Config {
  const issues: ConfigIssue[] = [];
  const values: Record<string, unknown> = {};
  const channels: Record<string, unknown> = {};
  const parse = (variable: string, spec: VariableSpec<unknown>, into: Record<string, unknown>, emptyIsUnset: boolean) => {
    const raw = source[variable];
    // Roster's own variables take empty as unset; a channel's schema says itself what empty means (a flag's is false).
    const result = spec.schema.safeParse(raw === '' && emptyIsUnset ? undefined : raw);
    if (result.success) {
      into[variable] = result.data;
      return;
    }
    const shown = spec.secret === true || raw === undefined ? '' : ` ${JSON.stringify(raw)}`;
    issues.push({ variable, message: `the value${shown} is not valid; expected ${spec.example}` });
  };
  for (const variable of environmentVariables) parse(variable, environment[variable] as VariableSpec<unknown>, values, true);
  for (const [variable, spec] of Object.entries(channelVariables)) parse(variable, spec, channels, false);
  if (values.NODE_ENV === 'production' && values.ROSTER_SECRET_KEY === undefined && !issues.some((i) => i.variable === 'ROSTER_SECRET_KEY')) {
    issues.push({
      variable: 'ROSTER_SECRET_KEY',
      message: `is required when NODE_ENV=production; set it to ${installationKeyFormat}`,
    });
  }
  // On a cluster every key of a queue must hash to one slot (BullMQ's scripts touch several at once): only a prefix in braces does that.
  const prefix = values.ROSTER_QUEUE_PREFIX;
  if (typeof values.REDIS_URL === 'string' && typeof prefix === 'string' && parseRedisUrl(values.REDIS_URL).kind === 'cluster' && !prefix.startsWith('{')) {
    issues.push({ variable: 'ROSTER_QUEUE_PREFIX', message: `must be in braces on a Redis Cluster (as {${prefix}}), so that each queue's keys share one slot` });
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return Object.freeze({ ...values, channels: Object.freeze(channels) }) as Config;
}

/** A copy of the config that is safe to log or print: secrets masked, URL passwords removed. */
export function redactConfig(config: Config): Record<string, unknown> {
  const shown: Record<string, unknown> = {};
  for (const variable of environmentVariables) {
    const value = config[variable];
    if (value === undefined) continue;
    if (variable === 'DATABASE_URL' || variable === 'REDIS_URL') shown[variable] = redactUrl(String(value));
    else shown[variable] = secretVariables.has(variable) ? '[secret]' : value;
  }
  // A channel's variables are its plugin's: which of them are secret is not known here, so none is shown.
  for (const [variable, value] of Object.entries(config.channels)) if (value !== undefined) shown[variable] = '[set]';
  return shown;
}

/** A connection string without its password, for messages and logs. */
export function redactUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return '[unparseable url]';
  }
}
