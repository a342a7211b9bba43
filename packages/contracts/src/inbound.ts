import type { EngineFile } from './engine.js';

/**
 * A door's registered name. `web` and `cli` are Roster's own doors; every
 * other one is the `name` of a channel plugin (`telegram`, `matrix`), so the
 * set grows with the registry, not with this type.
 */
export type Channel = string;

/** What a channel plugin's name looks like: it is stored with every message and binding. */
export const channelNamePattern = /^[a-z][a-z0-9-]{1,30}$/;

/** The doors that are Roster's own, not plugins. */
export const localDoors: readonly Channel[] = ['web', 'cli'];

/** A platform event, as an adapter (or the web page, or the CLI) hands it to the core. */
export interface InboundMessage {
  channel: Channel;
  /** The bot account it arrived on; its binding decides the agent and the access policy. */
  account?: string;
  conversation: { externalId: string; kind: 'dm' | 'group' };
  /**
   * Who sent it. Channels give the platform's handle (`externalId`); the local
   * doors that authenticate the owner's people themselves (CLI, web) give `personId`.
   */
  sender: { externalId?: string; personId?: string; displayName?: string };
  /** The platform's id of this message: a redelivery with the same id is processed once. */
  externalMessageId?: string;
  /** The words; may be empty when `files` carries something. */
  text: string;
  /**
   * Images, voice notes and documents that came with the message, at most
   * `maxFiles`, each at most `maxFileBytes`. They reach an agent whose engine
   * reads their kind, with this turn only; the stored message keeps a marker
   * (`[an image]`) in their place, never the bytes.
   */
  files?: readonly InboundFile[];
  /** Content from outside the conversation (a forwarded page, a file): never scanned for signals; marks the turn untrusted. */
  quoted?: string;
  /** A rating the platform carries (a reaction, a button). */
  rating?: 'negative' | 'positive';
}

/** A file as a door hands it to the core. */
export type InboundFile = EngineFile;

/** The largest file the core takes, in bytes (10 MB): adapters refuse a larger one before downloading it. */
export const maxFileBytes = 10 * 1024 * 1024;

/** The most files one message may carry. */
export const maxFiles = 4;
