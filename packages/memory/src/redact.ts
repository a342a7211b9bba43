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

/** What `redactSecrets` returns. */
export interface Redaction {
  /** The text with every secret replaced by `[redacted:<kind>]`. */
  text: string;
  /** Each kind redacted in this call, once, in order of first appearance in the text. */
  kinds: SecretKind[];
}

/** One recogniser. `redact` returns the replacement, or `undefined` to leave the match alone. */
interface SecretRule {
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
const sentinelPattern = /\uE000([a-z-]+)\uE001/g;
const placeholderPrefix = '[redacted:';

function sentinel(kind: SecretKind): string {
  return `${sentinelOpen}${kind}${sentinelClose}`;
}

function isRedacted(value: string): boolean {
  return value.startsWith(placeholderPrefix) || value.startsWith(sentinelOpen);
}

/** Replaces the whole match. */
function whole(kind: SecretKind, pattern: RegExp): SecretRule {
  return { pattern, redact: () => sentinel(kind) };
}

/** Keeps the `keep` group (a key, a header name) and replaces the `secret` group. */
function keyed(kind: SecretKind, pattern: RegExp): SecretRule {
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

const passwordKeys = [
  'password',
  'passwd',
  'pwd',
  'secret',
  'api[_-]?key',
  'token',
  'access[_-]?token',
  'auth[_-]?token',
  'refresh[_-]?token',
  'client[_-]?secret',
  'secret[_-]?(?:access[_-]?)?key',
].join('|');

/**
 * A bare value runs to the next whitespace. `&`, `;`, `,`, `.` and `:` belong to
 * it (`Tr0ub4dor&3`), except where they end it: before whitespace or the end of
 * the text (the full stop or comma that ends the sentence stays in the text),
 * and `&`, `;`, `,` before the next `name=` (a query string, a connection string).
 * `!` and `?` are kept inside the value: a password may end with one, and
 * redacting a sentence's last mark costs less than leaving a secret's last character.
 */
const separator = '[&;,.:]';
const bareValue =
  `(?:[^\\s"'“”«»&;,.:\\uE000\\uE001]|[&;,](?!${separator}*(?:\\s|$)|[A-Za-z][A-Za-z0-9_.-]*=)|[.:](?!${separator}*(?:\\s|$)))+`;

/**
 * Words that, after "password is", describe the password rather than give it
 * ("the password is wrong", "la password è la stessa"). A value made only of
 * these is prose; one with any other word is a password.
 */
const notAPassword = new Set(
  [
    // English
    'a', 'an', 'the', 'my', 'your', 'his', 'her', 'our', 'their', 'its', 'this', 'that', 'it', 'one', 'not', 'no', 'never',
    'still', 'now', 'also', 'too', 'very', 'so', 'just', 'only', 'always', 'being', 'been', 'to', 'for', 'with', 'in', 'on',
    'at', 'under', 'inside', 'behind', 'here', 'there', 'below', 'above', 'attached', 'written', 'saved', 'stored', 'same',
    'different', 'wrong', 'right', 'correct', 'incorrect', 'invalid', 'valid', 'expired', 'weak', 'strong', 'long', 'short',
    'required', 'needed', 'missing', 'empty', 'blank', 'changed', 'reset', 'updated', 'new', 'old', 'secret', 'private', 'safe',
    'unknown', 'forgotten', 'lost', 'shared', 'encrypted', 'hashed', 'ok', 'fine', 'good', 'bad', 'hard', 'easy', 'simple',
    'what', 'which', 'where', 'how', 'why', 'who', 'something', 'nothing', 'case', 'sensitive',
    // Italian
    'il', 'lo', 'la', 'i', 'gli', 'le', 'un', 'uno', 'una', 'mio', 'mia', 'tuo', 'tua', 'suo', 'sua', 'nostro', 'nostra',
    'vostro', 'vostra', 'loro', 'questo', 'questa', 'quello', 'quella', 'non', 'ancora', 'sempre', 'già', 'più', 'molto',
    'troppo', 'solo', 'anche', 'ora', 'adesso', 'qui', 'nel', 'nella', 'sul', 'sulla', 'sotto', 'di', 'da', 'del', 'della',
    'per', 'con', 'su', 'che', 'cosa', 'dove', 'come', 'quale', 'sbagliata', 'sbagliato', 'giusta', 'giusto', 'corretta',
    'corretto', 'errata', 'errato', 'scaduta', 'scaduto', 'valida', 'valido', 'cambiata', 'cambiato', 'nuova', 'nuovo',
    'vecchia', 'vecchio', 'lunga', 'lungo', 'corta', 'corto', 'debole', 'forte', 'semplice', 'facile', 'difficile', 'segreta',
    'segreto', 'stessa', 'stesso', 'diversa', 'diverso', 'obbligatoria', 'necessaria', 'vuota', 'scritta', 'salvata',
    'sconosciuta', 'persa', 'dimenticata',
  ],
);

/**
 * Words that name a public code, not a secret one: "the error code is 404",
 * "my postal code is 20121", "il codice fiscale è …". Looked for in the two
 * words before the key and in the words between the key and its connector.
 */
const publicCode = new Set([
  // English
  'zip', 'postal', 'post', 'area', 'country', 'dialling', 'dialing', 'calling', 'error', 'status',
  'exit', 'return', 'response', 'http', 'source', 'promo', 'promotional', 'discount', 'coupon', 'voucher', 'referral',
  'tracking', 'product', 'item', 'article', 'tax', 'fiscal', 'sort', 'swift', 'bic', 'iban', 'airport', 'iata', 'currency',
  'language', 'colour', 'color', 'hex', 'dress', 'bar', 'qr', 'morse', 'ascii', 'unicode', 'course', 'class', 'conduct',
  'practice', 'ethics', 'highway', 'penal', 'civil', 'zoning',
  // Italian
  'postale', 'avviamento', 'fiscale', 'sconto', 'promozionale', 'errore', 'stato', 'prodotto', 'articolo', 'sorgente',
  'cliente', 'paese', 'nazione', 'stradale', 'strada', 'tracciamento', 'spedizione', 'ateco', 'tributo', 'colore', 'corso',
  'esame', 'civile', 'penale', 'etico', 'condotta', 'barre',
]);

/** After the value, a unit says the value was a length, a count or a duration: "the PIN is 4 digits". */
const unitAfter =
  /^\s+(?:characters?|chars?|letters?|digits?|numbers?|symbols?|words?|lines?|pages?|times?|minutes?|seconds?|hours?|days?|caratteri|cifre|lettere|numeri|simboli|parole|righe|pagine|volte|minuti|secondi|ore|giorni)(?![\p{L}\p{N}])/iu;

const word = String.raw`[\p{L}\p{N}'’-]+`;

/** What introduces a secret said in a sentence; the named group gives the kind. */
const tokenKeys = [
  String.raw`(?<pin>pin(?:[\s-]?code|\s+number)?|pass[\s-]?code|(?:codice|numero)\s+pin)`,
  String.raw`(?<code>one[\s-]time\s+(?:pass(?:word|code)|code)|(?:codice\s+)?otp(?:\s+code)?|(?:2fa|mfa|sms)\s+code|code|combination|(?:codice|combinazione)(?:\s+\p{L}+)?)`,
  String.raw`(?<password>password|passwd|parola\s+(?:d['’]ordine|segreta))`,
].join('|');

/** Secrets that are phrases rather than tokens. */
const phraseKeys = [
  String.raw`(?<answer>security\s+answer|secret\s+answer|answer\s+to\s+(?:my|the|your)\s+(?:security|secret)\s+question|risposta\s+(?:alla\s+domanda\s+)?(?:di\s+sicurezza|segreta))`,
  String.raw`(?<passphrase>pass[\s-]?phrase|frase\s+(?:segreta|d['’]accesso))`,
].join('|');

/** "for the wifi", "of my bike lock", "del lucchetto", "dell'allarme": a preposition and up to four words. */
const spokenQualifier =
  String.raw`(?<qualifier>\s+(?:for|of|to|on|at|del|della|dello|dei|degli|delle|di|da|per|al|alla|allo|sul|sulla)\s+(?:${word}\s+){0,3}?${word}` +
  String.raw`|\s+dell['’]${word}(?:\s+${word}){0,2}?)?`;

/** "is", "=", ":", "is set to", "has been changed to", "è", "é", "è stato impostato a", "ora è". */
const spokenConnector = [
  String.raw`\s*[:=]\s*`,
  String.raw`\s+(?:is|was)(?:\s+(?:now|still|currently))?(?:\s+(?:set|changed|reset)\s+to)?(?:\s*:)?\s+`,
  String.raw`\s+(?:has|have)\s+been\s+(?:set|changed|reset)\s+to\s+`,
  String.raw`\s+(?:è|é|e'|era)(?:\s+(?:ora|adesso|ancora))?(?:\s+stat[oa]\s+(?:impostat[oa]|cambiat[oa]|modificat[oa])\s+(?:a|in|su|con))?(?:\s*:)?\s+`,
  String.raw`\s+(?:ora|adesso)\s+(?:è|é)\s+`,
].join('|');

const quotedValue = String.raw`"(?<double>[^"\n]*)"|'(?<single>[^'\n]*)'|“(?<curly>[^”\n]*)”|«(?<angle>[^»\n]*)»`;

/** Digits in groups, as codes are read out ("OTP: 123 456"), or one token. */
const tokenValue = String.raw`(?<grouped>\d+(?:[ ]\d+)+)(?=[.,;:!?)\]]*(?:\s|$))|(?<value>${bareValue})`;

/**
 * A phrase runs to the end of its clause: a full stop, `;`, `:`, `!` or `?`
 * before a space, a comma before a space, or the line's end. ("Paris, France"
 * keeps "France": a comma is read as the clause's end.) A clause is read for
 * at most 200 characters, so the search stays linear in the text's length;
 * one that has not ended by then is redacted for those 200.
 */
const clauseCharacter = String.raw`[^\n"“”«»\uE000\uE001]`;
const clauseValue =
  String.raw`(?<value>[^\s"'“”«»\uE000\uE001]` +
  String.raw`(?:${clauseCharacter}{0,199}?(?=[.;:!?,]*\s*$|[.;:!?,]\s|\n)|${clauseCharacter}{0,199}))`;

function spokenPattern(keys: string, value: string): RegExp {
  return new RegExp(
    String.raw`(?<![\p{L}\p{N}_])(?<keep>(?<key>${keys})${spokenQualifier}(?:${spokenConnector}))(?:${quotedValue}|${value})`,
    'giu',
  );
}

function wordsOf(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Whether the words around "code" name a public code ("error code", "codice fiscale"). */
function namesPublicCode(match: RegExpExecArray, input: string): boolean {
  const before = wordsOf(input.slice(Math.max(0, match.index - 40), match.index)).slice(-2);
  const around = [...before, ...wordsOf(match.groups?.['key'] ?? ''), ...wordsOf(match.groups?.['qualifier'] ?? '')];
  return around.some((each) => publicCode.has(each));
}

/** Closing brackets at a value's end with no opening one inside it belong to the sentence: "(my PIN is 4417)". */
function unmatchedClosers(value: string): string {
  let end = value.length;
  while (end > 1 && /[)\]}]/.test(value.charAt(end - 1))) {
    const closer = value.charAt(end - 1);
    const opener = closer === ')' ? '(' : closer === ']' ? '[' : '{';
    const body = value.slice(0, end);
    if (body.split(opener).length >= body.split(closer).length) break;
    end -= 1;
  }
  return value.slice(end);
}

/**
 * A secret introduced as such in a sentence: "the wifi password is hunter2",
 * "my PIN is 4417", "il codice del lucchetto è 4417", "my security answer is
 * Fluffy". The words that introduce it are kept; the value is redacted whole.
 * A PIN or code must hold a digit ("the code is ready" is prose); a password
 * must not be only words that describe it ("the password is wrong"); a
 * "code" named as a public one is kept ("the error code is 404"); a value
 * followed by a unit is a length, a count or a duration ("the PIN is 4 digits").
 */
function spoken(keys: string, value: string): SecretRule {
  return {
    pattern: spokenPattern(keys, value),
    redact(match, input) {
      const groups = match.groups ?? {};
      const kind: SecretKind =
        groups['answer'] !== undefined
          ? 'security-answer'
          : groups['pin'] !== undefined
            ? 'pin'
            : groups['code'] !== undefined
              ? 'access-code'
              : 'password';
      const keep = groups['keep'] ?? '';
      const quoted = groups['double'] ?? groups['single'] ?? groups['curly'] ?? groups['angle'];
      const found = quoted ?? groups['grouped'] ?? groups['value'] ?? '';
      if (found.trim() === '' || isRedacted(found)) return undefined;
      if ((kind === 'pin' || kind === 'access-code') && !/\d/.test(found)) return undefined;
      if (kind === 'access-code' && namesPublicCode(match, input)) return undefined;
      if (quoted !== undefined) {
        const opening = match[0].charAt(keep.length);
        const closing = match[0].charAt(match[0].length - 1);
        return `${keep}${opening}${sentinel(kind)}${closing}`;
      }
      if (kind === 'password' && wordsOf(found).every((each) => notAPassword.has(each))) return undefined;
      const end = match.index + match[0].length;
      if (unitAfter.test(input.slice(end, end + 40))) return undefined;
      return keep + sentinel(kind) + unmatchedClosers(found);
    },
  };
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
