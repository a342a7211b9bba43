/** What the WhatsApp far side offers its tests (fake-whatsapp.ts), and how it is started. Test-only. */
import type { Delivered, FakePlatform, PlatformUser } from '@roster/channels/testing';
import type { InstallationKey } from '@roster/config';
import type { LinkedDeviceStore } from '@roster/contracts';
import type { MediaType, proto, UserFacingSocketConfig, WAMessage, WAMessageKey, WAPresence } from 'baileys';
import type { WhatsAppSocket, WhatsAppSocketFactory } from './connection.js';
import type { MediaFields } from './fake-media-server.js';
import type { createWhatsAppAdapter, WhatsAppAdapterOptions } from './whatsapp-adapter.js';

export interface FakeSocket extends WhatsAppSocket {
  readonly config: UserFacingSocketConfig;
  readonly closed: boolean;
}

export interface FakeWhatsApp extends FakePlatform {
  /** What the adapter makes its sockets with. */
  readonly socketFactory: WhatsAppSocketFactory;
  /** Every socket made, in order. */
  readonly sockets: FakeSocket[];
  /** The QR code the current socket shows, or null. */
  currentQr(): string | null;
  /** A phone scans the QR code shown now: WhatsApp pairs, then asks the device to restart. */
  scan(): void;
  /** The phone removes the linked device (WhatsApp closes with 401). */
  logOut(): void;
  /** The connection is lost (WhatsApp closes with 428). */
  drop(): void;
  /** The next `count` connections fail before opening (Infinity: until told 0). */
  failConnects(count: number): void;
  /** The messages marked read, in order. */
  reads(): WAMessageKey[];
  /** Presence updates the bot sent: `composing`, `paused`, with the chat. */
  presences(): Array<{ type: WAPresence; jid: string }>;
  /** Make an adapter against this far side (its session in `store`, sealed with `key`). */
  makeAdapter(options?: Partial<WhatsAppAdapterOptions>): ReturnType<typeof createWhatsAppAdapter>;
  /** Deliver a raw message as WhatsApp would. */
  push(message: WAMessage): void;
  /** Deliver a one-to-one message from `from` with this content (a media message built from `upload`'s fields), as baileys emits it. */
  deliverContent(from: PlatformUser, content: proto.IMessage): Promise<Delivered>;
  /** Emit a `messages.upsert` event with this data, whatever it holds, as baileys' emitter would. */
  upsert(data: unknown): void;
  /** The local server that answers as WhatsApp's media servers (`http://127.0.0.1:…`): what the adapter fetches media from. */
  readonly mediaOrigin: string;
  /** Encrypt bytes as a WhatsApp client does before it uploads them, and serve them: the media fields a message carries. */
  upload(data: Uint8Array, media: MediaType): Promise<MediaFields>;
  /** WhatsApp's media server no longer has this file (it answers 410 Gone). */
  expire(directPath: string): void;
  /** The media paths fetched, in order. */
  downloads(): string[];
}

export interface FakeWhatsAppOptions {
  /** Where the adapters it makes keep the account's session (and which account they serve). */
  store: LinkedDeviceStore;
  key: InstallationKey;
  /** QR codes one pairing shows before WhatsApp ends it (default 6, as WhatsApp's refs). */
  qrCodes?: number;
  /** How long each QR code lives (default 20 s). */
  qrMs?: number;
}
