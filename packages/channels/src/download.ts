import { maxFileBytes, type FileKind } from '@roster/contracts';
import { ChannelError } from './errors.js';

const names: Record<FileKind, string> = { image: 'image', audio: 'voice note', file: 'file' };

/** The sentence a person reads when what they sent is over the limit: nothing was kept. */
export function tooLargeText(kind: FileKind): string {
  return `That ${names[kind]} is too large: the most Roster takes is ${maxFileBytes / (1024 * 1024)} MB. Nothing was kept; send a smaller one.`;
}

export interface DownloadOptions {
  /** What it is, for the messages (`image`, `voice note`). */
  kind: FileKind;
  /** The platform, for the messages (`Telegram`). */
  platform: string;
  /** Sent with the request (a bot token in `Authorization`); never logged or repeated in an error. */
  headers?: Record<string, string>;
  /** The most bytes taken (default `maxFileBytes`); a larger file is refused, its download stopped. */
  maxBytes?: number;
  signal?: AbortSignal;
  fetch?: typeof fetch;
  /**
   * A web page instead of the file means the platform refused the token
   * (Slack answers a sign-in page, with 200); say this instead.
   */
  refusedAsPage?: string;
}

/**
 * Fetch a file a person sent from the platform's file address, reading at
 * most `maxBytes`: a larger one is refused (by its announced length when it
 * has one, else once the bytes pass the limit) with a `ChannelError` whose
 * message a person can read. The address is never put in an error: it may
 * carry the bot token.
 */
export async function downloadFile(url: string, options: DownloadOptions): Promise<Uint8Array> {
  const maxBytes = options.maxBytes ?? maxFileBytes;
  const tooLarge = () => new ChannelError('failed', tooLargeText(options.kind), { retryable: false });
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(url, { ...(options.headers === undefined ? {} : { headers: options.headers }), ...(options.signal === undefined ? {} : { signal: options.signal }), redirect: 'follow' });
  } catch (error) {
    throw new ChannelError('failed', `The ${names[options.kind]} could not be fetched from ${options.platform}; send it again in a moment.`, {
      retryable: true,
      cause: error instanceof Error ? error.name : 'Error',
    });
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new ChannelError('failed', `${options.platform} did not give the ${names[options.kind]} (${response.status}); send it again in a moment.`, { retryable: response.status >= 500 });
  }
  if (options.refusedAsPage !== undefined && (response.headers.get('content-type') ?? '').startsWith('text/html')) {
    await response.body?.cancel();
    throw new ChannelError('failed', options.refusedAsPage);
  }
  const announced = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(announced) && announced > maxBytes) {
    await response.body?.cancel();
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body !== null) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        throw tooLarge();
      }
      chunks.push(value);
    }
  }
  const data = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    data.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return data;
}
