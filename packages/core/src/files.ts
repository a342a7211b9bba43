import type { Engine, EngineFile, FileKind } from '@roster/contracts';
import { InvalidInputError } from './errors.js';
import { maxFileBytes, maxFiles } from './types.js';

const kinds: readonly FileKind[] = ['image', 'audio', 'file'];
const one: Record<FileKind, string> = { image: 'an image', audio: 'an audio clip', file: 'a file' };
const many: Record<FileKind, string> = { image: 'images', audio: 'voice notes or audio', file: 'files' };
const mediaTypePattern = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/i;

/** Megabytes, as a person reads them (`10 MB`, `10.5 MB`). */
function megabytes(bytes: number): string {
  // Rounded up, so that a file just over the limit does not read as the limit itself.
  const value = Math.ceil((bytes / (1024 * 1024)) * 10) / 10;
  return `${Number.isInteger(value) ? value : value.toFixed(1)} MB`;
}

/**
 * The files of an inbound message, checked: at most `maxFiles`, each of a
 * known kind and media type, not empty, at most `maxFileBytes`. Refuses with
 * an `InvalidInputError` that says what to do; nothing is kept then.
 */
export function validateFiles(files: readonly unknown[] | undefined): EngineFile[] {
  if (files === undefined) return [];
  if (!Array.isArray(files)) throw new InvalidInputError('files must be a list of files.');
  if (files.length > maxFiles) throw new InvalidInputError(`A message carries at most ${maxFiles} files; send the rest in another message.`);
  return files.map((given): EngineFile => {
    const file = given as Partial<EngineFile> | null;
    if (file === null || typeof file !== 'object') throw new InvalidInputError('Each file needs a kind, a media type and its bytes.');
    if (typeof file.kind !== 'string' || !kinds.includes(file.kind)) throw new InvalidInputError(`A file's kind is one of ${kinds.join(', ')}.`);
    if (typeof file.mediaType !== 'string' || !mediaTypePattern.test(file.mediaType)) throw new InvalidInputError(`The media type of ${one[file.kind]} must look like image/jpeg.`);
    if (!(file.data instanceof Uint8Array)) throw new InvalidInputError(`The bytes of ${one[file.kind]} are missing.`);
    if (file.data.byteLength === 0) throw new InvalidInputError(`${capitalised(one[file.kind])} arrived empty; send it again.`);
    if (file.data.byteLength > maxFileBytes) {
      throw new InvalidInputError(`${capitalised(one[file.kind])} of ${megabytes(file.data.byteLength)} is too large: the most is ${megabytes(maxFileBytes)}. Send a smaller one.`);
    }
    const name = typeof file.name === 'string' && file.name.trim() !== '' ? file.name.trim().slice(0, 200) : undefined;
    return { kind: file.kind, mediaType: file.mediaType.toLowerCase(), data: file.data, ...(name === undefined ? {} : { name }) };
  });
}

/** What the stored message keeps in place of its files: `[an image]`, `[an image, an audio clip]`. */
export function fileMarker(files: readonly EngineFile[]): string {
  return files.length === 0 ? '' : `[${files.map((file) => one[file.kind]).join(', ')}]`;
}

/** The kinds among `files` that `engine` does not read, each once. */
export function unreadKinds(engine: Engine, files: readonly EngineFile[]): FileKind[] {
  return [...new Set(files.map((file) => file.kind))].filter((kind) => !engine.accepts.includes(kind));
}

/** An agent's plain answer to files its engine cannot read. */
export function cannotReadFiles(unread: readonly FileKind[], hasText: boolean): string {
  const what = unread.map((kind) => many[kind]).join(' or ');
  return `I cannot read ${what} here, only text: ${hasText ? 'tell me in words what it holds, please.' : 'say it in words, please.'}`;
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
