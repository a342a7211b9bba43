/**
 * The parts every secret rule is made of: the kinds, the rule shape, and the
 * sentinels a redaction is written as while the rules run (redact.ts turns
 * them into `[redacted:<kind>]` at the end).
 */

/**
 * The kinds of secret `redactSecrets` recognises, as they appear in `[redacted:<kind>]`.
 *
 * Four of them also cover what people type in chat, in English and Italian:
 * - `password`: a password or passphrase (`parola d'ordine`), as a key/value
 *   pair or said in a sentence ("the wifi password is hunter2").
 * - `pin`: a PIN or passcode ("my PIN is 4417", "il mio PIN è 1234").
 * - `access-code`: a code that opens something or proves who someone is: a
 *   door, gate, locker or alarm code, a combination, a one-time or
 *   verification code (`codice`, `combinazione`, `OTP`). Codes that are public
 *   identifiers (postal, country, area, error, status, discount, tax codes)
 *   are not secrets and are kept.
 * - `security-answer`: the answer to a security question, which is a phrase
 *   rather than a token, so it is redacted to the end of its clause.
 */
export type SecretKind =
  | 'private-key'
  | 'jwt'
  | 'anthropic-key'
  | 'openai-key'
  | 'aws-access-key'
  | 'aws-secret-key'
  | 'github-token'
  | 'slack-token'
  | 'telegram-bot-token'
  | 'bearer'
  | 'password'
  | 'pin'
  | 'access-code'
  | 'security-answer'
  | 'card-number';


/** One recogniser. `redact` returns the replacement, or `undefined` to leave the match alone. */
export interface SecretRule {
  pattern: RegExp;
  redact(match: RegExpExecArray, input: string): string | undefined;
}

/**
 * While the rules run, a redaction is written as a private-use sentinel rather
 * than the final `[redacted:<kind>]`: the sentinel characters belong to no
 * rule's character class, so later rules cannot match inside it, and a final
 * pass can list the kinds in text order. Placeholders already present in the
 * input stay as they are and are not reported again.
 */
const sentinelOpen = '\uE000';
const sentinelClose = '\uE001';
export const sentinelPattern = /\uE000([a-z-]+)\uE001/g;
export const placeholderPrefix = '[redacted:';

export function sentinel(kind: SecretKind): string {
  return `${sentinelOpen}${kind}${sentinelClose}`;
}

export function isRedacted(value: string): boolean {
  return value.startsWith(placeholderPrefix) || value.startsWith(sentinelOpen);
}

/** Replaces the whole match. */
export function whole(kind: SecretKind, pattern: RegExp): SecretRule {
  return { pattern, redact: () => sentinel(kind) };
}

/** Keeps the `keep` group (a key, a header name) and replaces the `secret` group. */
export function keyed(kind: SecretKind, pattern: RegExp): SecretRule {
  return {
    pattern,
    redact(match) {
      const keep = match.groups?.['keep'] ?? '';
      const secret = match.groups?.['secret'] ?? '';
      if (secret === '' || isRedacted(secret)) return undefined;
      return keep + sentinel(kind);
    },
  };
}

