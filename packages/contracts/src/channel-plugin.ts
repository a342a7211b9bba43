import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import type { ChannelAdapter } from './channel-adapter.js';
import type { LinkedDeviceStatus, LinkedDeviceStore } from './linked-device.js';

/**
 * One environment variable a plugin reads. The host parses every registered
 * plugin's variables once at start, with Roster's own, and reports a bad value
 * by its name (never echoing a secret one).
 */
export interface VariableSpec<T = unknown> {
  /** Parses the raw value (`undefined` when unset or empty). */
  schema: z.ZodType<T>;
  /** A valid value, shown in errors, `--help` and the README. */
  example: string;
  description: string;
  /** Never logged, printed or echoed in an error. */
  secret?: boolean;
}

/**
 * A credential the owner may store (sealed with the installation key) instead
 * of setting its variable: entered once with `roster channel add` or on the
 * page, never shown again.
 */
export interface CredentialField {
  /** What the owner calls it, in messages and on the page (`the bot token from @BotFather`). */
  label: string;
  /** The environment variable that gives it instead; when set, it wins. */
  variable: string;
  /** The option of `roster channel add` that takes it: `token` is `--token`. */
  option: string;
  /** A prefix the platform gives every such value, checked to catch a pasted wrong token. */
  prefix?: string;
}

/**
 * Rooms of a platform where every message is for the bot without a mention
 * (Discord's bound server channels). Stored on the bot's binding; the plugin
 * alone knows what an id looks like.
 */
export interface BoundRooms {
  /** What they are called, in messages (`Discord server channels`). */
  label: string;
  /** The option of `roster channel add` that sets them: `channel` is `--channel`. */
  option: string;
  /** The variable that lists them instead (comma-separated); when set, it wins. */
  variable?: string;
  /** At most this many. */
  max: number;
  /** Why `id` is not one, or null when it is. */
  check(id: string): string | null;
}

/** What the host knows of a channel when it asks the plugin whether, and how, to serve it. */
export interface ChannelSources {
  /** The plugin's own environment variables, as their schemas parsed them (unset ones absent or undefined). */
  environment: Readonly<Record<string, unknown>>;
  /** The stored credentials of the bot Roster serves (the `default` account), by credential name. */
  stored: Readonly<Record<string, string>>;
  /** The bound rooms stored on that bot's binding (empty where the plugin has none). */
  boundRooms: readonly string[];
  /** Where this installation's HTTP server answers (`http://127.0.0.1:8420`), for messages about webhooks. */
  serverAddress: string;
}

/**
 * Whether a channel is served, from its sources: `configured` with the
 * settings an adapter is made from (a change of them restarts it), `off`
 * (nothing set), or `incomplete` (something set, something missing: said, as
 * a failure, by `roster doctor`).
 */
export type ChannelSetup<Settings> =
  | {
      state: 'configured';
      settings: Settings;
      /** How it receives, for `roster doctor` (`long polling`, `webhook at …`), where that is worth saying. */
      mode?: string;
      /**
       * The platform lets one session receive for the account (a long poll, a
       * gateway connection, a socket), so one gateway holds it through a lease
       * and the others stand by (the default). `false` for a webhook: every
       * server takes what is posted to it.
       */
      exclusive?: boolean;
    }
  | { state: 'off'; detail: string }
  | { state: 'incomplete'; detail: string };

/** The leveled logger a plugin writes to (the host's pino logger fits it). */
export interface ChannelLogger {
  debug(object: unknown, message?: string): void;
  info(object: unknown, message?: string): void;
  warn(object: unknown, message?: string): void;
  error(object: unknown, message?: string): void;
  child(bindings: Record<string, unknown>): ChannelLogger;
}

/** What the host gives a plugin to make and check its adapter. */
export interface ChannelHost {
  logger: ChannelLogger;
  /** A secret derived from the installation key for `purpose`: the same on every process of the installation. */
  derive(purpose: string): Buffer;
  /**
   * Services by name: `key`, the installation key, with which a plugin seals
   * what it keeps (a linked device's session); a test's stand-ins. Absent
   * where the process has none.
   */
  services: Readonly<Record<string, unknown>>;
  /**
   * The durable state of a linked device (a channel with a `link` step:
   * WhatsApp's session), for one account of `channel`, kept in Roster's
   * database by the host. Absent where the process has no database open.
   */
  linkedDevice?(channel: string, account: string): LinkedDeviceStore;
}

/** What `roster doctor` says of a configured channel, after trying it against its platform. */
export interface ChannelCheck {
  status: 'ok' | 'fail';
  detail: string;
}

/**
 * An HTTP path the platform posts to (Slack's events, Telegram's updates).
 * Every server and gateway mounts every plugin's webhooks; a request for a
 * channel this process does not serve in webhook mode is answered 404.
 */
export interface ChannelWebhook {
  path: string;
  /** Answer one request with the running adapter, or say it is not this adapter's to answer (`false`: 404). */
  handle(adapter: ChannelAdapter, request: IncomingMessage, response: ServerResponse): boolean;
}

/**
 * A pairing step a channel needs instead of a token: WhatsApp's linked
 * device, whose code a phone scans. `roster channel add` runs it.
 */
export interface ChannelLink {
  /** The option of `roster channel add` that skips it and only binds. */
  skipOption: string;
  /** What the person does with the first code (`On the phone: … scan this code`). */
  instructions: string;
  /**
   * Wait for the link, calling `onCode` with each code to show (as text a
   * terminal prints); resolves with who was linked, or that it was already.
   */
  run(
    host: ChannelHost,
    options: { account: string; signal: AbortSignal; onCode(text: string, index: number): Promise<void> | void },
  ): Promise<{ already: boolean; who: string }>;
  /** The link as it stands, for the page's Channels screen: while a code waits, the code to scan as an SVG image. */
  state(host: ChannelHost, options: { account: string }): Promise<ChannelLinkState>;
}

/** Where a channel's link stands. */
export interface ChannelLinkState {
  status: 'not_linked' | LinkedDeviceStatus;
  /** Who is linked (a phone number), kept after a logout to say which to link again. */
  who: string | null;
  /** While it waits for a scan: the code, an SVG image. Never the code's text, which holds its pairing secret. */
  codeSvg: string | null;
  updatedAt: Date | null;
  /** What to do, in words. */
  detail: string;
}

/**
 * One part of a bot account's receiving, held by one gateway under its own
 * lease: Discord's gateway shard `id` of `count`.
 */
export interface ChannelShard {
  id: number;
  count: number;
}

/**
 * A channel, as one package describes it. The gateway, `roster channel`,
 * `roster doctor`, the server's webhook routes and the page's Channels screen
 * iterate the registry of these; nothing outside a plugin names a channel.
 */
export interface ChannelPlugin<Settings = unknown> {
  /** The registered name (`channelNamePattern`), stored with every conversation and binding it brings. */
  readonly name: string;
  /** How people write it (`Telegram`). */
  readonly label: string;
  /** A sentence for `roster channel list` and the page: what serving it takes. */
  readonly summary: string;
  /** Its environment variables, by name. */
  readonly environment: Readonly<Record<string, VariableSpec>>;
  /** The credentials that may be stored instead of set, by name (`bot_token`). Empty: nothing to store. */
  readonly credentials: Readonly<Record<string, CredentialField>>;
  readonly boundRooms?: BoundRooms;
  readonly webhooks?: readonly ChannelWebhook[];
  readonly link?: ChannelLink;
  /** Whether, and with what settings, to serve it. */
  setup(sources: ChannelSources): ChannelSetup<Settings>;
  /**
   * The adapter for these settings (not started: the host starts it). A
   * promise, so that the platform's library is loaded only where a channel is
   * served, never by `roster channel list`.
   */
  create(settings: Settings, host: ChannelHost, shard?: ChannelShard): Promise<ChannelAdapter>;
  /**
   * How many parts receiving the account splits into (Discord's gateway
   * shards): each is held by one gateway under its own lease, and made with
   * `create(settings, host, shard)`. Absent: one, the whole account.
   */
  shards?(settings: Settings, host: ChannelHost): Promise<number>;
  /** Try the settings against the platform (a token's `getMe`), within `timeoutMs`. */
  check(settings: Settings, host: ChannelHost, options: { timeoutMs?: number }): Promise<ChannelCheck>;
}

/** A plugin as the registry holds it, whatever its settings' type. */
export type AnyChannelPlugin = ChannelPlugin<any>;

/** Declares a plugin, checking its shape where it is written. */
export function defineChannelPlugin<Settings>(plugin: ChannelPlugin<Settings>): ChannelPlugin<Settings> {
  return plugin;
}
