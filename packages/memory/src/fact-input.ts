// Checks and shapes of what callers hand memory, before any transaction opens.
import type { InstallationKey } from '@roster/config';
import { isUuid } from '@roster/db';
import { RosterError } from '@roster/errors';
import { redactSecrets } from './redact.js';
import { contentHash, keyedContentHash, validateText } from './text.js';
import type { Provenance, Trust } from './types.js';

/** What a fact may be when it is corrected or updated. */
export const liveTrust: readonly Trust[] = ['candidate', 'active', 'verified', 'disputed'];

/** A job's or an untrusted agent's statement starts as a candidate; a person's or a trusted agent's is active. */
export function trustFor(provenance: Provenance): Trust {
  if (provenance.actor.kind === 'job') return 'candidate';
  if (provenance.actor.kind === 'agent' && provenance.untrusted === true) return 'candidate';
  return 'active';
}

/**
 * The text as stored, its unkeyed hash (kept beside it in `facts` to find
 * duplicates, erased when it is forgotten) and its keyed hash (what the
 * audit log may keep of it for good).
 */
export function prepareContent(key: InstallationKey, content: unknown): { content: string; hash: string; keyedHash: string } {
  const valid = validateText(content, 'content');
  const redacted = redactSecrets(valid).text;
  return { content: redacted, hash: contentHash(redacted), keyedHash: keyedContentHash(key, redacted) };
}

export function validCategory(category: string | undefined): string {
  const value = category ?? 'general';
  if (!/^[a-z][a-z0-9_-]{0,39}$/.test(value)) {
    throw new RosterError('memory_input_invalid', `category must be a short lower-case word (letters, digits, - or _), got ${JSON.stringify(value).slice(0, 60)}.`);
  }
  return value;
}

export function validProvenance(provenance: Provenance): void {
  for (const id of provenance.sourceMessageIds ?? []) {
    if (!isUuid(id)) throw new RosterError('memory_input_invalid', `sourceMessageIds must be message ids (UUIDs), got ${JSON.stringify(id).slice(0, 60)}.`);
  }
}
