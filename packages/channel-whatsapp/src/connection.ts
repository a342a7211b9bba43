import type { ChannelLogger as Logger } from '@roster/contracts';
import {
  Browsers,
  DisconnectReason,
  makeCacheableSignalKeyStore,
  makeWASocket,
  type AnyMessageContent,
  type BaileysEventEmitter,
  type Contact,
  type MiscMessageGenerationOptions,
  type UserFacingSocketConfig,
  type WAMessage,
  type WAMessageKey,
  type WAPresence,
} from 'baileys';
import type { ILogger } from 'baileys/lib/Utils/logger.js';
import type { WhatsAppSession } from './session.js';

/**
 * The part of a baileys socket Roster uses: its event emitter, the account
 * it is, and the calls that send. `makeWASocket` makes the real one; a test
 * gives one whose far side is a fake.
 */
export interface WhatsAppSocket {
  readonly ev: BaileysEventEmitter;
  /** The linked account, once connected (`4915…:12@s.whatsapp.net`, with its `lid`). */
  readonly user: Contact | undefined;
  sendMessage(jid: string, content: AnyMessageContent, options?: MiscMessageGenerationOptions): Promise<WAMessage | undefined>;
  readMessages(keys: WAMessageKey[]): Promise<void>;
  sendPresenceUpdate(type: WAPresence, jid?: string): Promise<void>;
  /** Close the connection; `connection.update` then says `close` with this error (none: an intentional close). */
  end(error: Error | undefined): void | Promise<void>;
}

/** Makes a socket from baileys' configuration: `makeWASocket` unless a test gives another. */
export type WhatsAppSocketFactory = (config: UserFacingSocketConfig) => WhatsAppSocket;

export const makeBaileysSocket: WhatsAppSocketFactory = (config) => makeWASocket(config);

/** What the connection tells its owner. */
export interface ConnectionEvents {
  /** A QR code waits for a scan (its text, to draw). */
  onQr?(qr: string): void;
  /** The connection is up as this account. */
  onOpen?(user: Contact): void;
  /** The phone removed this device: nothing more is tried. */
  onLoggedOut?(): void;
  /** A pairing ran out of QR codes without a scan: nothing more is tried. */
  onPairingExpired?(): void;
  /** The connection dropped; the next try is in `delayMs`. */
  onReconnecting?(delayMs: number, reason: number | undefined): void;
  /** The socket of the current connection, for the messages it brings. */
  onSocket?(socket: WhatsAppSocket): void;
}

export interface ConnectionOptions {
  store: WhatsAppSession;
  socketFactory?: WhatsAppSocketFactory;
  logger?: Logger;
  /** The first wait after a drop; it doubles on each failed try (default 1 s). */
  backoffMs?: number;
  /** The longest wait between tries (default a minute). */
  maxBackoffMs?: number;
  /** Pair a new device when none is linked (default true); false waits for one linked elsewhere. */
  pair?: boolean;
  /** While not linked (logged out, a pairing unscanned), how often to look for a link made by another process (default 10 s). */
  linkPollMs?: number;
}

/**
 * One WhatsApp account's connection: sockets made one after another over the
 * stored session. A dropped connection is tried again after a backoff that
 * doubles up to a minute (at once when WhatsApp asks for a restart, as it
 * does right after pairing); a logout is recorded and ends it. While no
 * device is linked, each QR code is stored (sealed) for the page, and one
 * linked meanwhile by another process is taken up.
 */
export class WhatsAppConnection {
  private socket: WhatsAppSocket | undefined;
  private user: Contact | undefined;
  private stopped = false;
  private failures = 0;
  private retry: NodeJS.Timeout | undefined;
  private poll: NodeJS.Timeout | undefined;
  /** Credential writes, one after another: the next socket reads what the last one stored. */
  private saving: Promise<void> = Promise.resolve();
  private readonly waiting = new Set<() => void>();
  readonly log: Logger | undefined;
  private readonly baileysLog: ILogger;

  constructor(
    private readonly options: ConnectionOptions,
    private readonly events: ConnectionEvents,
  ) {
    this.log = options.logger?.child({ component: 'gateway/whatsapp', account: options.store.account });
    this.baileysLog = baileysLogger(this.log);
  }

  /** The account, while the connection is up. */
  get me(): Contact | undefined {
    return this.user;
  }

  get current(): WhatsAppSocket | undefined {
    return this.socket;
  }

  /** Make the first socket. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.connect();
  }

  /** Resolves once the connection is up, or after `ms` (false). */
  whenOpen(ms: number): Promise<boolean> {
    if (this.user !== undefined) return Promise.resolve(true);
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiting.delete(done);
        resolve(this.user !== undefined);
      };
      const timer = setTimeout(done, ms);
      this.waiting.add(done);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry !== undefined) clearTimeout(this.retry);
    if (this.poll !== undefined) clearTimeout(this.poll);
    this.retry = undefined;
    this.poll = undefined;
    const socket = this.socket;
    this.socket = undefined;
    this.user = undefined;
    for (const done of [...this.waiting]) done();
    if (socket !== undefined) await socket.end(undefined);
    await this.saving;
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const { store } = this.options;
    await this.saving;
    const auth = await store.authState();
    if (!auth.linked) {
      if (this.options.pair === false) {
        this.log?.warn('WhatsApp is not linked: link it with roster channel add whatsapp');
        this.watchForLink();
        return;
      }
      if (!(await store.beginPairing())) return this.connect();
    }
    const socket = (this.options.socketFactory ?? makeBaileysSocket)({
      auth: { creds: auth.state.creds, keys: makeCacheableSignalKeyStore(auth.state.keys, this.baileysLog) },
      logger: this.baileysLog,
      browser: Browsers.ubuntu('Roster'),
      // Roster is a bot on a linked device: the phone keeps its notifications, and no history is pulled in.
      markOnlineOnConnect: false,
      syncFullHistory: false,
      shouldSyncHistoryMessage: () => false,
      // A recipient that could not decrypt asks for the message again: baileys keeps recent ones for that.
      enableRecentMessageCache: true,
      getMessage: async () => undefined,
    });
    this.socket = socket;
    socket.ev.on('creds.update', () => {
      this.saving = this.saving
        .then(auth.saveCreds)
        .catch((error: unknown) => this.log?.error({ err: safeError(error) }, 'WhatsApp credentials could not be stored'));
    });
    socket.ev.on('connection.update', (update) => {
      if (socket !== this.socket) return;
      if (update.qr !== undefined) void this.onQr(socket, update.qr);
      if (update.connection === 'open') void this.onOpen(socket);
      if (update.connection === 'close') {
        const error = update.lastDisconnect?.error as { output?: { statusCode?: number } } | undefined;
        void this.onClose(error?.output?.statusCode, auth.linked || auth.state.creds.me !== undefined);
      }
    });
    this.events.onSocket?.(socket);
  }

  private async onQr(socket: WhatsAppSocket, qr: string): Promise<void> {
    try {
      // Another process (roster channel add whatsapp, another gateway) linked the account meanwhile: use that link.
      if (!(await this.options.store.showQr(qr))) {
        this.log?.info('WhatsApp was linked by another process; connecting with that link');
        this.socket = undefined;
        await socket.end(undefined);
        await this.connect();
        return;
      }
      this.events.onQr?.(qr);
    } catch (error) {
      this.log?.error({ err: safeError(error) }, 'a WhatsApp QR code could not be stored');
    }
  }

  private async onOpen(socket: WhatsAppSocket): Promise<void> {
    this.failures = 0;
    this.user = socket.user;
    await this.options.store.setConnection('linked').catch((error: unknown) => this.log?.error({ err: safeError(error) }, 'the WhatsApp link state could not be stored'));
    this.log?.info('WhatsApp connected');
    if (socket.user !== undefined) this.events.onOpen?.(socket.user);
    for (const done of [...this.waiting]) done();
  }

  private async onClose(reason: number | undefined, linked: boolean): Promise<void> {
    this.socket = undefined;
    this.user = undefined;
    if (this.stopped) return;
    if (reason === DisconnectReason.loggedOut) {
      await this.options.store.loggedOut().catch((error: unknown) => this.log?.error({ err: safeError(error) }, 'a WhatsApp logout could not be recorded'));
      this.log?.warn('WhatsApp logged this device out: link it again with roster channel add whatsapp');
      for (const done of [...this.waiting]) done();
      this.events.onLoggedOut?.();
      this.watchForLink();
      return;
    }
    if (!linked && reason === DisconnectReason.timedOut) {
      // Every QR code of this pairing went unscanned: the page shows none that would not work.
      await this.options.store.pairingEnded().catch(() => undefined);
      this.log?.info('no phone scanned the WhatsApp QR codes in time: link it with roster channel add whatsapp');
      for (const done of [...this.waiting]) done();
      this.events.onPairingExpired?.();
      this.watchForLink();
      return;
    }
    // WhatsApp asks for a restart after pairing and now and then: that is no failure.
    const delayMs = reason === DisconnectReason.restartRequired ? 0 : this.nextDelay();
    if (linked) await this.options.store.setConnection('reconnecting').catch(() => undefined);
    if (delayMs > 0) this.log?.warn({ reason, delayMs }, 'the WhatsApp connection closed; trying again');
    this.events.onReconnecting?.(delayMs, reason);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.connect().catch((error: unknown) => {
        this.log?.error({ err: safeError(error) }, 'WhatsApp could not reconnect');
        void this.onClose(undefined, linked);
      });
    }, delayMs);
  }

  /** Nothing is tried until a link appears in the store (roster channel add whatsapp, run beside): then connect with it. */
  private watchForLink(): void {
    if (this.stopped) return;
    const look = () => {
      this.poll = setTimeout(() => {
        this.poll = undefined;
        if (this.stopped) return;
        this.options.store.linked().then(
          (linked) => {
            if (this.stopped) return;
            if (!linked) return look();
            this.log?.info('WhatsApp was linked by another process; connecting with that link');
            this.connect().catch((error: unknown) => this.log?.error({ err: safeError(error) }, 'WhatsApp could not connect'));
          },
          () => look(),
        );
      }, this.options.linkPollMs ?? 10_000);
      this.poll.unref();
    };
    look();
  }

  private nextDelay(): number {
    const base = this.options.backoffMs ?? 1000;
    const max = this.options.maxBackoffMs ?? 60_000;
    const delay = Math.min(base * 2 ** this.failures, max);
    this.failures += 1;
    // A little jitter, so that many gateways do not knock at once.
    return Math.round(delay * (0.8 + Math.random() * 0.4));
  }
}

/** Baileys' logger, speaking through Roster's at warnings and above (its lower levels can carry message contents). */
function baileysLogger(log: Logger | undefined): ILogger {
  const make = (): ILogger => ({
    level: 'warn',
    child: () => make(),
    trace: () => undefined,
    debug: () => undefined,
    info: () => undefined,
    warn: (object: unknown, message?: string) => log?.warn({ baileys: describe(object) }, message ?? 'baileys warning'),
    error: (object: unknown, message?: string) => log?.error({ baileys: describe(object) }, message ?? 'baileys error'),
  });
  return make();
}

/** What of a baileys log object may be logged: names, codes and messages of errors, never nodes or message contents. */
function describe(object: unknown): unknown {
  if (object instanceof Error) return safeError(object);
  if (typeof object !== 'object' || object === null) return typeof object === 'string' ? object : undefined;
  const value = object as Record<string, unknown>;
  const error = value.err ?? value.error;
  return error instanceof Error ? safeError(error) : Object.keys(value);
}

export function safeError(error: unknown): { name: string; message: string; code?: number } {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const status = (error as { output?: { statusCode?: number } }).output?.statusCode;
  return { name: error.name, message: error.message, ...(status === undefined ? {} : { code: status }) };
}
