import { describe, expect, it } from 'vitest';
import { containsSecret, redactSecrets, type SecretKind } from './redact.js';

// Every fake secret is assembled at run time, so no whole credential-shaped literal sits in the source.

/**
 * Secrets people type in chat, introduced as such. `{secret}` marks where the
 * value goes; the expected text is the same sentence with `[redacted:<kind>]`
 * there, so a value cut short (a leftover `&3`) or a swallowed full stop fails.
 */
interface SpokenCase {
  said: string;
  secret: string;
}

const spokenSecrets: Record<'password' | 'pin' | 'access-code' | 'security-answer', { english: SpokenCase[]; italian: SpokenCase[]; prose: string[] }> = {
  password: {
    english: [
      { said: 'the wifi password is {secret}', secret: 'hunter2' },
      { said: 'my password: {secret}.', secret: 'Tr0ub4dor&3' },
      { said: 'The password for the wifi is set to {secret}, ok?', secret: 'Tr0ub4dor&3' },
      { said: 'my bank password has been changed to {secret} yesterday', secret: 'Gr33n;Tea,42' },
      { said: 'my passphrase is {secret}.', secret: 'correct horse battery staple' },
      { said: 'the password is "{secret}"', secret: 'two words' },
      // A final `!` or `?` is taken as part of the value: a password may end with one.
      { said: 'password = {secret}', secret: 'a.b.c!' },
    ],
    italian: [
      { said: 'la password del wifi è {secret}', secret: 'hunter2' },
      { said: "la parola d'ordine è {secret}.", secret: 'Mela42!' },
      { said: 'la password del conto è stata cambiata in {secret}, ricordalo', secret: 'Tr0ub4dor&3' },
      { said: 'la password è: {secret}', secret: 'Zaino#9' },
    ],
    prose: [
      'the password policy changed',
      'the wifi password is on the fridge',
      'the password is wrong, try again',
      'my password is too short.',
      'The password hint is the name of her first cat.',
      'la password è sbagliata',
      'la password del wifi è la stessa di prima',
    ],
  },
  pin: {
    english: [
      { said: 'my PIN is {secret}', secret: '4417' },
      { said: 'the pin code for my card is {secret}.', secret: '0906' },
      { said: 'my phone passcode is {secret}, do not share it', secret: '998877' },
      { said: '(my PIN is {secret})', secret: '4417' },
    ],
    italian: [
      { said: 'il mio PIN è {secret}', secret: '1234' },
      { said: 'il PIN del bancomat è {secret}.', secret: '5531' },
      { said: 'il codice PIN è ora {secret}', secret: '8080' },
    ],
    prose: ['the PIN is 4 digits long', 'il PIN è di 5 cifre', 'the pin is in the drawer', 'pin the post to the top'],
  },
  'access-code': {
    english: [
      { said: 'the door code is {secret}', secret: '2580' },
      { said: 'my locker code is {secret}.', secret: '7731' },
      { said: 'the gate code: {secret}', secret: '1590#' },
      { said: 'the security code is {secret}', secret: '123' },
      { said: 'your verification code is {secret}, it expires in 10 minutes', secret: '482913' },
      { said: 'OTP: {secret}.', secret: '123 456' },
      { said: 'the combination is {secret}', secret: '12-34-56' },
      { said: 'the code for the bike lock is {secret}', secret: '0042' },
    ],
    italian: [
      { said: 'il codice del lucchetto è {secret}', secret: '4417' },
      { said: 'il codice del cancello è {secret}.', secret: '4721' },
      { said: "il codice dell'allarme è {secret}", secret: '1990' },
      { said: 'la combinazione della cassaforte è {secret}.', secret: '12-34-56' },
      { said: 'il codice è stato cambiato in {secret}', secret: 'A7x9' },
      { said: 'il codice OTP è {secret}', secret: '771204' },
    ],
    prose: [
      'my postcode is 20121',
      'the zip code is 20121',
      'zip code 20121',
      'country code +39',
      'the country code is +39',
      'error code 404',
      'the error code is 404',
      'the HTTP status code is 200',
      'the code review is tomorrow',
      'the code is ready for review',
      'the code of conduct is 12 pages',
      'il codice postale è 20121',
      'il codice fiscale è RSSMRA80A01H501U',
      'codice sconto: SAVE10',
      'il codice sorgente è 300 righe',
    ],
  },
  'security-answer': {
    english: [
      { said: 'my security answer is {secret}.', secret: 'Fluffy the cat' },
      { said: 'The answer to my security question is {secret}', secret: 'Via Roma 12' },
    ],
    italian: [
      { said: 'risposta di sicurezza: {secret}', secret: 'Milano' },
      { said: 'la risposta segreta è {secret}.', secret: 'nonna Pina' },
    ],
    prose: ['I forgot my security answer.', 'security answers are stored hashed'],
  },
};

describe('redactSecrets: secrets said in a sentence', () => {
  for (const [kind, { english, italian, prose }] of Object.entries(spokenSecrets) as [SecretKind, (typeof spokenSecrets)['pin']][]) {
    for (const [language, cases] of [['English', english], ['Italian', italian]] as const) {
      it.each(cases)(`redacts a ${kind} in ${language}: %j`, ({ said, secret }) => {
        const input = said.replace('{secret}', secret);
        const result = redactSecrets(input);
        expect(result).toEqual({ text: said.replace('{secret}', `[redacted:${kind}]`), kinds: [kind] });
        expect(result.text).not.toContain(secret);
        // No part of the value survives: neither its first nor its last characters.
        expect(result.text).not.toContain(secret.slice(0, 3) + (secret.length > 3 ? secret.charAt(3) : ''));
        expect(result.text).not.toContain(secret.slice(-2));
        expect(containsSecret(input)).toBe(true);
        expect(redactSecrets(result.text)).toEqual({ text: result.text, kinds: [] });
      });
    }

    it.each(prose)(`leaves prose about a ${kind} unchanged: %j`, (text) => {
      expect(redactSecrets(text)).toEqual({ text, kinds: [] });
      expect(containsSecret(text)).toBe(false);
    });
  }

  it('leaves no part of a punctuation-laden password, and keeps the full stop that ends the sentence', () => {
    const result = redactSecrets('my password: Tr0ub4dor&3. the wifi password is P@ss;w0rd,x.');
    expect(result.text).toBe('my password: [redacted:password]. the wifi password is [redacted:password].');
    for (const fragment of ['Tr0ub4dor', '&3', 'P@ss', ';w0rd', ',x']) expect(result.text).not.toContain(fragment);
  });

  it('redacts each secret in a message that holds several, and keeps the prose between them', () => {
    const result = redactSecrets('The door code is 2580 and my PIN is 4417; the code review is tomorrow, the wifi password is hunter2.');
    expect(result).toEqual({
      text: 'The door code is [redacted:access-code] and my PIN is [redacted:pin]; the code review is tomorrow, the wifi password is [redacted:password].',
      kinds: ['access-code', 'pin', 'password'],
    });
  });

  it('keeps the public code and redacts the secret one in the same message (positive control beside the negative)', () => {
    const result = redactSecrets('My postcode is 20121 and the door code is 2580. Il codice postale è 20121, il codice del portone è 2580.');
    expect(result.text).toBe(
      'My postcode is 20121 and the door code is [redacted:access-code]. Il codice postale è 20121, il codice del portone è [redacted:access-code].',
    );
    expect(result.text).not.toContain('2580');
    expect(result.text.match(/20121/g)).toHaveLength(2);
  });

  it('is idempotent over every example and every control', () => {
    const samples = Object.values(spokenSecrets).flatMap(({ english, italian, prose }) => [
      ...[...english, ...italian].map(({ said, secret }) => said.replace('{secret}', secret)),
      ...prose,
    ]);
    expect(samples.length).toBeGreaterThan(50);
    for (const sample of samples) {
      const once = redactSecrets(sample);
      expect(redactSecrets(once.text).text).toBe(once.text);
    }
  });
});
