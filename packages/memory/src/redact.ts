/**
 * Secret redaction (DESIGN promise 6: "secrets are redacted before anything is
 * stored"). Every text that reaches memory, its audit trail or its logs passes
 * through `redactSecrets` first; a secret becomes `[redacted:<kind>]`.
 *
 * The rules favour precision: each one looks for the shape of a real credential
 * (a vendor prefix, a key/value pair, a Luhn-valid card number, a secret
 * introduced as such in a sentence) so that ordinary prose, phone numbers,
 * dates, UUIDs and order numbers pass untouched.
 */
import { isRedacted, keyed, placeholderPrefix, sentinel, sentinelPattern, whole, type SecretKind, type SecretRule } from './redact-rule.js';
import { bareValue, clauseValue, passwordKeys, phraseKeys, spoken, tokenKeys, tokenValue } from './redact-spoken.js';

export type { SecretKind } from './redact-rule.js';

/** What `redactSecrets` returns. */
export interface Redaction {
  /** The text with every secret replaced by `[redacted:<kind>]`. */
  text: string;
  /** Each kind redacted in this call, once, in order of first appearance in the text. */
  kinds: SecretKind[];
}

/** The Luhn checksum every payment card number satisfies. */
function passesLuhn(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let index = digits.length - 1; index >= 0; index -= 1) {
    let digit = digits.charCodeAt(index) - 48;
    if (digit < 0 || digit > 9) return false;
    if (double) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
    double = !double;
  }
  return sum % 10 === 0;
}
const rules: readonly SecretRule[] = [
  // Whole PEM blocks first: their base64 body would otherwise feed the generic rules.
  // A block cut off before its END line is redacted to the end of the text.
  whole(
    'private-key',
    /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)/g,
  ),
  // Header and payload both start `eyJ` (base64url of `{"`); the signature is optional (alg "none").
  whole('jwt', /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}(?:\.[A-Za-z0-9_-]+)?/g),
  // Before openai-key, which also starts `sk-`.
  whole('anthropic-key', /(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}/g),
  // `sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`: the variants' prefixes are inside the class.
  whole('openai-key', /(?<![A-Za-z0-9_-])sk-(?!ant-)[A-Za-z0-9_-]{20,}/g),
  whole('aws-access-key', /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g),
  // A bare 40-character base64 string is too common to redact alone; only after its AWS name.
  keyed(
    'aws-secret-key',
    /(?<keep>\baws[ _-]?secret(?:[ _-]?access)?(?:[ _-]?key)?["']?(?:[ \t]*[:=][ \t]*|[ \t]+)["']?)(?<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])/gi,
  ),
  whole('github-token', /(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36,}/g),
  whole('github-token', /(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,}/g),
  whole('slack-token', /(?<![A-Za-z0-9_-])xox[baprs]-[A-Za-z0-9-]{10,}/g),
  whole('slack-token', /(?<![A-Za-z0-9_-])xapp-[A-Za-z0-9-]{10,}/g),
  whole('telegram-bot-token', /(?<![A-Za-z0-9_])\d{8,10}:[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])/g),
  // An Authorization header's credential is redacted whatever it looks like.
  keyed(
    'bearer',
    /(?<keep>\bauthorization["']?[ \t]*[:=][ \t]*["']?(?:bearer|basic)[ \t]+)(?<secret>[A-Za-z0-9._~+/=-]{4,})/gi,
  ),
  // Elsewhere "bearer" is also an English word ("the bearer instrument"): the token must hold a digit.
  keyed(
    'bearer',
    /(?<keep>\bbearer[ \t]+)(?=[A-Za-z._~+/=-]*\d)(?<secret>[A-Za-z0-9._~+/=-]{8,})(?![A-Za-z0-9._~+/=-])/gi,
  ),
  // key=value and key: value pairs, also quoted (JSON, YAML, .env) and with a prefix (`DB_PASSWORD`).
  {
    pattern: new RegExp(
      `(?<![A-Za-z0-9_.-])(?<keep>(?:[A-Za-z0-9]+[_.-])*(?:${passwordKeys})["']?[ \\t]*[:=][ \\t]*)` +
        `(?:"(?<double>[^"\\n]*)"|'(?<single>[^'\\n]*)'|(?<bare>${bareValue}))`,
      'gi',
    ),
    redact(match) {
      const groups = match.groups ?? {};
      const keep = groups['keep'] ?? '';
      if (groups['double'] !== undefined || groups['single'] !== undefined) {
        const quote = groups['double'] !== undefined ? '"' : "'";
        const value = groups['double'] ?? groups['single'] ?? '';
        if (value.trim() === '' || isRedacted(value)) return undefined;
        return `${keep}${quote}${sentinel('password')}${quote}`;
      }
      const value = groups['bare'] ?? '';
      if (value === '' || isRedacted(value)) return undefined;
      return keep + sentinel('password');
    },
  },
  // The password in a URL's user information: `postgres://roster:hunter2@localhost/roster`.
  keyed(
    'password',
    /(?<keep>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/[^\s:/?#@\uE000\uE001]+:)(?<secret>[^\s/?#@\uE000\uE001]+)(?=@)/g,
  ),
  // Said in a sentence: phrases first, so a passphrase that runs on over a later "code is …" hides it whole.
  spoken(phraseKeys, clauseValue),
  spoken(tokenKeys, tokenValue),
  // Card numbers last: 13–19 digits, single spaces or hyphens between groups, Luhn-valid.
  {
    pattern: /(?<![A-Za-z0-9])\d(?:[ -]?\d)*/g,
    redact(match, input) {
      const run = match[0];
      const start = match.index;
      const end = start + run.length;
      const digits = run.replace(/[ -]/g, '');
      if (digits.length < 13 || digits.length > 19) return undefined;
      // Issuers' numbers start 2–6 (Mastercard 2/5, Amex/Diners/JCB 3, Visa 4, Discover/UnionPay/Maestro 5–6);
      // the rest of the digit space is mostly order numbers, timestamps and account ids.
      if (!/^[2-6]/.test(digits)) return undefined;
      const before = input.slice(Math.max(0, start - 2), start);
      const after = input.slice(end, end + 2);
      // A phone number (+39 …), the tail of a hyphenated identifier (UUID), or a decimal's fraction.
      if (/\+$|[A-Za-z0-9]-$|\d[.,]$/.test(before)) return undefined;
      // Glued to a letter, or continuing as a hyphenated identifier or a decimal.
      if (/^[A-Za-z]|^-[A-Za-z0-9]|^[.,]\d/.test(after)) return undefined;
      if (!passesLuhn(digits)) return undefined;
      return sentinel('card-number');
    },
  },
];

function applyRule(input: string, rule: SecretRule): string {
  let output = '';
  let last = 0;
  for (const match of input.matchAll(rule.pattern)) {
    const replacement = rule.redact(match, input);
    if (replacement === undefined) continue;
    output += input.slice(last, match.index) + replacement;
    last = match.index + match[0].length;
  }
  return last === 0 ? input : output + input.slice(last);
}

/** Every kind, so that only the sentinels this module wrote are turned into placeholders. */
const kindNames: Record<SecretKind, true> = {
  'private-key': true,
  jwt: true,
  'anthropic-key': true,
  'openai-key': true,
  'aws-access-key': true,
  'aws-secret-key': true,
  'github-token': true,
  'slack-token': true,
  'telegram-bot-token': true,
  bearer: true,
  password: true,
  pin: true,
  'access-code': true,
  'security-answer': true,
  'card-number': true,
};
const knownKinds = new Set<string>(Object.keys(kindNames));

/**
 * Replaces every secret in `text` with `[redacted:<kind>]`.
 *
 * Rules run from the most specific (PEM blocks, JWTs, vendor-prefixed keys) to
 * the most generic (key/value pairs, card numbers), so a secret is named by its
 * most precise kind. Key/value and header rules keep the key and redact only the
 * value (`password=[redacted:password]`). Idempotent: redacting a redacted text
 * changes nothing and reports no kinds.
 */
export function redactSecrets(text: string): Redaction {
  let working = text;
  for (const rule of rules) working = applyRule(working, rule);
  const kinds: SecretKind[] = [];
  const output = working.replace(sentinelPattern, (whole, kind: string) => {
    if (!knownKinds.has(kind)) return whole;
    if (!kinds.includes(kind as SecretKind)) kinds.push(kind as SecretKind);
    return `${placeholderPrefix}${kind}]`;
  });
  return { text: output, kinds };
}

/** Whether `text` holds a secret `redactSecrets` would redact. */
export function containsSecret(text: string): boolean {
  return redactSecrets(text).kinds.length > 0;
}
