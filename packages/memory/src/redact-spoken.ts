/**
 * Secrets said in a sentence, in English and Italian: a password, PIN, access
 * code or security answer introduced as such ("the wifi password is hunter2",
 * "il mio PIN è 1234"), and the words that show a match is not one.
 */
import { isRedacted, sentinel, type SecretKind, type SecretRule } from './redact-rule.js';

export const passwordKeys = [
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
export const bareValue =
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
export const tokenKeys = [
  String.raw`(?<pin>pin(?:[\s-]?code|\s+number)?|pass[\s-]?code|(?:codice|numero)\s+pin)`,
  String.raw`(?<code>one[\s-]time\s+(?:pass(?:word|code)|code)|(?:codice\s+)?otp(?:\s+code)?|(?:2fa|mfa|sms)\s+code|code|combination|(?:codice|combinazione)(?:\s+\p{L}+)?)`,
  String.raw`(?<password>password|passwd|parola\s+(?:d['’]ordine|segreta))`,
].join('|');

/** Secrets that are phrases rather than tokens. */
export const phraseKeys = [
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
export const tokenValue = String.raw`(?<grouped>\d+(?:[ ]\d+)+)(?=[.,;:!?)\]]*(?:\s|$))|(?<value>${bareValue})`;

/**
 * A phrase runs to the end of its clause: a full stop, `;`, `:`, `!` or `?`
 * before a space, a comma before a space, or the line's end. ("Paris, France"
 * keeps "France": a comma is read as the clause's end.) A clause is read for
 * at most 200 characters, so the search stays linear in the text's length;
 * one that has not ended by then is redacted for those 200.
 */
const clauseCharacter = String.raw`[^\n"“”«»\uE000\uE001]`;
export const clauseValue =
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
export function spoken(keys: string, value: string): SecretRule {
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

