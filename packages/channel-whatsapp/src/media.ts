import { createHash } from 'node:crypto';
import type { Transform } from 'node:stream';
import { ChannelError, tooLargeText, type ChannelEvent } from '@roster/channels';
import { maxFileBytes, type FileKind, type InboundFile } from '@roster/contracts';
import { downloadContentFromMessage, toNumber, type MediaType, type proto } from 'baileys';

/** Where WhatsApp's media servers answer when a message names none of theirs (baileys' `DEF_MEDIA_HOST`). */
const whatsappMediaOrigin = 'https://mmg.whatsapp.net';

/** The fields every WhatsApp media message carries: where its encrypted bytes are, the key that opens them, their hash and size. */
interface MediaContent {
  url?: string | null;
  directPath?: string | null;
  mediaKey?: Uint8Array | null;
  fileSha256?: Uint8Array | null;
  /** A number, or a protobuf Long. */
  fileLength?: Parameters<typeof toNumber>[0];
  mimetype?: string | null;
}

/** A file of a message, to fetch from WhatsApp's media servers. */
export interface Attachment {
  kind: FileKind;
  mediaType: string;
  /** Baileys' name for the media, which picks the keys its bytes are encrypted with. */
  media: MediaType;
  content: MediaContent;
  name?: string;
}

const names: Record<FileKind, string> = { image: 'image', audio: 'voice note', file: 'file' };
const mediaTypePattern = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/**
 * The media of a message's content: the kinds it carries (to name them) and
 * the files Roster fetches (images, stickers, voice notes, audio, documents;
 * videos are named, not fetched). Fields of the wrong type (a message no
 * WhatsApp client sends) leave a file out rather than fail.
 */
export function mediaOf(content: proto.IMessage): { media: ChannelEvent['media']; attachments: Attachment[] } {
  const media: ChannelEvent['media'] = [];
  const attachments: Attachment[] = [];
  if (isRecord(content.imageMessage)) {
    media.push('image');
    attach(attachments, content.imageMessage, 'image', 'image', 'image/jpeg');
  } else if (isRecord(content.stickerMessage)) {
    media.push('image');
    attach(attachments, content.stickerMessage, 'sticker', 'image', 'image/webp');
  }
  const audio = content.audioMessage;
  if (isRecord(audio)) {
    const voice = audio.ptt === true;
    media.push(voice ? 'voice' : 'audio');
    // A voice note is Opus in Ogg (`audio/ogg; codecs=opus`); its parameters are not part of the media type.
    attach(attachments, audio, 'audio', 'audio', voice ? 'audio/ogg' : 'audio/mpeg');
  }
  if (isRecord(content.videoMessage) || isRecord(content.ptvMessage)) media.push('video');
  const document = content.documentMessage;
  if (isRecord(document)) {
    media.push('file');
    const type = cleanType(document.mimetype);
    const kind: FileKind = type?.startsWith('image/') ? 'image' : type?.startsWith('audio/') ? 'audio' : 'file';
    const name = typeof document.fileName === 'string' && document.fileName.trim() !== '' ? document.fileName : undefined;
    attach(attachments, document, 'document', kind, type ?? 'application/octet-stream', name);
  }
  return { media, attachments };
}

function attach(into: Attachment[], content: object, media: MediaType, kind: FileKind, fallbackType: string, name?: string): void {
  const given = cleanType((content as MediaContent).mimetype);
  // An image message says what image it is; one that claims another kind is read as the image its message says it is.
  const mediaType = given !== undefined && (kind === 'file' || given.startsWith(`${kind}/`)) ? given : fallbackType;
  into.push({ kind, mediaType, media, content: content as MediaContent, ...(name === undefined ? {} : { name }) });
}

/** `audio/ogg; codecs=opus` as the media type `audio/ogg`; anything that is not one, undefined. */
function cleanType(mimetype: unknown): string | undefined {
  if (typeof mimetype !== 'string') return undefined;
  const type = mimetype.split(';')[0]!.trim().toLowerCase();
  return mediaTypePattern.test(type) ? type : undefined;
}

/**
 * Fetch one file from WhatsApp's media servers and open it with baileys
 * (`downloadContentFromMessage`: the message's media key, expanded with
 * HKDF, decrypts the AES-CBC bytes as they arrive). A file WhatsApp
 * announced over `maxFileBytes` is refused before anything is fetched, and
 * one that grows past it while it arrives is stopped there. The bytes are
 * checked against the hash the message carries (baileys does not check the
 * media's MAC). Every failure is a `ChannelError` a person can read; the
 * address is never put in one.
 */
export async function fetchAttachment(attachment: Attachment, options: { origin?: string; signal: AbortSignal }): Promise<InboundFile> {
  const { kind, content } = attachment;
  const name = names[kind];
  const announced = content.fileLength === null || content.fileLength === undefined ? undefined : safeNumber(content.fileLength);
  if (announced !== undefined && announced > maxFileBytes) throw new ChannelError('failed', tooLargeText(kind));
  const unreadable = () => new ChannelError('failed', `That ${name} could not be opened: WhatsApp's copy of it does not match the message. Nothing was kept; send it again.`);
  const url = mediaUrl(content, options.origin);
  if (url === null || !(content.mediaKey instanceof Uint8Array) || content.mediaKey.byteLength !== 32) throw unreadable();
  if (options.signal.aborted) throw stopped();

  let stream: Transform;
  try {
    stream = await untilAborted(downloadContentFromMessage({ mediaKey: content.mediaKey, url }, attachment.media), options.signal);
  } catch (error) {
    if (ChannelError.isChannelError(error)) throw error;
    const status = (error as { output?: { statusCode?: unknown } } | null)?.output?.statusCode;
    // WhatsApp's media servers keep a file for a while only: 404 or 410 once it is gone.
    if (status === 404 || status === 410) throw new ChannelError('failed', `WhatsApp no longer has that ${name} (its copy expired on WhatsApp's servers); send it again.`);
    throw new ChannelError('failed', `The ${name} could not be fetched from WhatsApp; send it again in a moment.`, { retryable: true, cause: error instanceof Error ? error.name : 'Error' });
  }

  // Baileys pipes the HTTP body into its decipher and gives only the decipher:
  // once the decipher is stopped, the body it leaves is destroyed too, so the download ends there.
  stream.once('unpipe', (source: { destroy(): void }) => source.destroy());
  const stop = () => stream.destroy();
  options.signal.addEventListener('abort', stop, { once: true });
  const chunks: Buffer[] = [];
  const hash = createHash('sha256');
  let size = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.byteLength;
      if (size > maxFileBytes) throw new ChannelError('failed', tooLargeText(kind));
      hash.update(chunk);
      chunks.push(chunk);
    }
  } catch (error) {
    if (ChannelError.isChannelError(error)) throw error;
    if (options.signal.aborted) throw stopped();
    // A key that does not open the bytes ends in a bad padding (`bad decrypt`).
    throw unreadable();
  } finally {
    options.signal.removeEventListener('abort', stop);
    stream.destroy();
  }
  const expected = content.fileSha256;
  if (size === 0 || (expected instanceof Uint8Array && expected.byteLength > 0 && !hash.digest().equals(expected))) throw unreadable();
  return { kind, mediaType: attachment.mediaType, data: new Uint8Array(Buffer.concat(chunks, size)), ...(attachment.name === undefined ? {} : { name: attachment.name }) };
}

/**
 * The address of a message's media: its `directPath` on WhatsApp's media
 * server (the one its `url` names when that is WhatsApp's, as baileys
 * picks it), or `origin` where one is given. Anything else (another host,
 * a path that leaves the server) is not fetched: a message is written by
 * its sender's client, and the gateway fetches only from WhatsApp.
 */
function mediaUrl(content: MediaContent, origin?: string): string | null {
  const given = typeof content.url === 'string' ? parsed(content.url) : undefined;
  const fromWhatsApp = given !== undefined && given.protocol === 'https:' && /(^|\.)whatsapp\.net$/.test(given.hostname);
  const base = new URL(origin ?? (fromWhatsApp ? given.origin : whatsappMediaOrigin));
  let path: string;
  if (typeof content.directPath === 'string' && content.directPath !== '') path = content.directPath;
  else if (fromWhatsApp) path = `${given.pathname}${given.search}`;
  else return null;
  if (!path.startsWith('/') || path.startsWith('//') || path.includes('\\')) return null;
  const url = parsed(`${base.origin}${path}`);
  return url !== undefined && url.origin === base.origin ? url.href : null;
}

function parsed(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

function safeNumber(value: NonNullable<MediaContent['fileLength']>): number | undefined {
  const number = typeof value === 'number' ? value : typeof value === 'object' ? toNumber(value) : Number.NaN;
  return Number.isFinite(number) ? number : undefined;
}

function stopped(): ChannelError {
  return new ChannelError('failed', 'The gateway is stopping; send it again in a moment.', { retryable: true });
}

/** `promise`, or a rejection once `signal` aborts; what it brings after that is let go. */
function untilAborted(promise: Promise<Transform>, signal: AbortSignal): Promise<Transform> {
  return new Promise((resolve, reject) => {
    const abort = () => reject(stopped());
    signal.addEventListener('abort', abort, { once: true });
    promise.then(
      (stream) => {
        signal.removeEventListener('abort', abort);
        if (!signal.aborted) return resolve(stream);
        stream.once('unpipe', (source: { destroy(): void }) => source.destroy());
        stream.destroy();
      },
      (error: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(error);
      },
    );
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
