import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { containsSecret, redactSecrets, type SecretKind } from './redact.js';

// Every fake secret is assembled at run time, so no whole credential-shaped literal sits in the source.

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** Appends the Luhn check digit to `body`, giving a number that passes the check. */
function withLuhnDigit(body: string): string {
  let sum = 0;
  for (let index = 0; index < body.length; index += 1) {
    let digit = Number(body[body.length - 1 - index]);
    if (index % 2 === 0) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return body + String((10 - (sum % 10)) % 10);
}

/** Changes the last digit, so the number fails the Luhn check. */
function breakLuhn(number: string): string {
  const last = Number(number.slice(-1));
  return number.slice(0, -1) + String((last + 1) % 10);
}

function group(digits: string, sizes: number[], separator: string): string {
  const parts: string[] = [];
  let start = 0;
  for (const size of sizes) {
    parts.push(digits.slice(start, start + size));
    start += size;
  }
  return parts.join(separator);
}

const visa = withLuhnDigit('4' + '1'.repeat(14));
const amex = withLuhnDigit('37' + '8282246310'.padEnd(12, '0'));
const jwt = [base64url({ alg: 'HS256', typ: 'JWT' }), base64url({ sub: '1234567890', name: 'Ada' }), 'c2lnbmF0dXJl' + 'x'.repeat(20)].join('.');

function pemBlock(label: string): string {
  return [`-----BEGIN ${label}-----`, 'MIIE' + 'q'.repeat(60), 'Zm9v' + 'b'.repeat(60), `-----END ${label}-----`].join('\n');
}

interface Case {
  name: string;
  secret: string;
  kind: SecretKind;
}

const wholeSecrets: Case[] = [
  { name: 'OpenAI key', secret: 'sk-' + 'A1b2C3d4'.repeat(6), kind: 'openai-key' },
  { name: 'OpenAI project key', secret: 'sk-proj-' + 'a'.repeat(40), kind: 'openai-key' },
  { name: 'OpenAI service account key', secret: 'sk-svcacct-' + 'Z9_y-'.repeat(8), kind: 'openai-key' },
  { name: 'Anthropic key', secret: 'sk-ant-api03-' + 'k'.repeat(80) + '-AA', kind: 'anthropic-key' },
  { name: 'AWS access key id', secret: 'AKIA' + 'IOSFODNN7' + 'EXAMPLE', kind: 'aws-access-key' },
  { name: 'AWS temporary access key id', secret: 'ASIA' + 'Q'.repeat(8) + '23456789', kind: 'aws-access-key' },
  { name: 'GitHub personal token', secret: 'ghp_' + 'a1B2'.repeat(9), kind: 'github-token' },
  { name: 'GitHub app token', secret: 'ghs_' + 'Z'.repeat(40), kind: 'github-token' },
  { name: 'GitHub fine-grained token', secret: 'github_pat_' + '11AB'.repeat(6) + '_' + 'c'.repeat(59), kind: 'github-token' },
  { name: 'Slack bot token', secret: 'xoxb-' + '1234567890-' + '0987654321-' + 'AbCd'.repeat(6), kind: 'slack-token' },
  { name: 'Slack user token', secret: 'xoxp-' + '12345'.repeat(3), kind: 'slack-token' },
  { name: 'Slack app token', secret: 'xapp-1-' + 'A0B1C2D3'.repeat(2) + '-1234', kind: 'slack-token' },
  { name: 'Telegram bot token', secret: '123456789:' + 'AA' + 'hX_-'.repeat(8) + 'q', kind: 'telegram-bot-token' },
  { name: 'JWT', secret: jwt, kind: 'jwt' },
  { name: 'unsigned JWT', secret: jwt.split('.').slice(0, 2).join('.'), kind: 'jwt' },
  { name: 'Visa number', secret: visa, kind: 'card-number' },
  { name: 'card number in groups of four', secret: group(visa, [4, 4, 4, 4], ' '), kind: 'card-number' },
  { name: 'card number with hyphens', secret: group(visa, [4, 4, 4, 4], '-'), kind: 'card-number' },
  { name: 'Amex number', secret: group(amex, [4, 6, 5], ' '), kind: 'card-number' },
  { name: '19-digit card number', secret: withLuhnDigit('6' + '2'.repeat(17)), kind: 'card-number' },
];

describe('redactSecrets: secrets redacted whole', () => {
  for (const { name, secret, kind } of wholeSecrets) {
    it(`redacts a ${name} and keeps the text around it`, () => {
      const result = redactSecrets(`Remember this: ${secret} (from the setup notes).`);
      expect(result.text).toBe(`Remember this: [redacted:${kind}] (from the setup notes).`);
      expect(result.kinds).toEqual([kind]);
    });
  }

  it('names an Anthropic key anthropic-key, never openai-key', () => {
    const result = redactSecrets('sk-ant-' + 'x'.repeat(30));
    expect(result).toEqual({ text: '[redacted:anthropic-key]', kinds: ['anthropic-key'] });
  });

  for (const label of ['RSA PRIVATE KEY', 'EC PRIVATE KEY', 'OPENSSH PRIVATE KEY', 'PRIVATE KEY', 'ENCRYPTED PRIVATE KEY']) {
    it(`redacts a whole ${label} block across lines`, () => {
      const result = redactSecrets(`deploy key:\n${pemBlock(label)}\nend of note`);
      expect(result.text).toBe('deploy key:\n[redacted:private-key]\nend of note');
      expect(result.kinds).toEqual(['private-key']);
    });
  }

  it('redacts a private key block cut off before its END line', () => {
    const block = pemBlock('RSA PRIVATE KEY').split('\n').slice(0, 3).join('\n');
    expect(redactSecrets(`key: ${block}`)).toEqual({ text: 'key: [redacted:private-key]', kinds: ['private-key'] });
  });

  it('leaves a public key or certificate alone', () => {
    const text = pemBlock('PUBLIC KEY');
    expect(redactSecrets(text)).toEqual({ text, kinds: [] });
  });
});

describe('redactSecrets: credentials redacted, their key kept', () => {
  const awsSecret = 'wJalrXUtnFEMI' + '/K7MDENG/' + 'bPxRfiCY' + 'A'.repeat(10);

  it.each([
    ['aws_secret_access_key = ', ''],
    ['AWS_SECRET_ACCESS_KEY=', ''],
    ['aws secret: ', ''],
    ['aws secret ', ''],
    ['"aws_secret_access_key": "', '"'],
  ])('redacts an AWS secret key after %j', (prefix, suffix) => {
    expect(awsSecret).toHaveLength(40);
    const result = redactSecrets(`${prefix}${awsSecret}${suffix} in prod`);
    expect(result.text).toBe(`${prefix}[redacted:aws-secret-key]${suffix} in prod`);
    expect(result.kinds).toEqual(['aws-secret-key']);
  });

  it('does not redact a 40-character string without its AWS name', () => {
    const text = `commit ${'0123456789abcdef'.repeat(2)}01234567 landed`;
    expect(redactSecrets(text)).toEqual({ text, kinds: [] });
  });

  it('redacts a bearer token and keeps the header', () => {
    const token = 'abc' + '123DEF'.repeat(5);
    expect(redactSecrets(`Authorization: Bearer ${token}`)).toEqual({
      text: 'Authorization: Bearer [redacted:bearer]',
      kinds: ['bearer'],
    });
    expect(redactSecrets(`curl -H "authorization: bearer ${token}" https://api.example.com`)).toEqual({
      text: 'curl -H "authorization: bearer [redacted:bearer]" https://api.example.com',
      kinds: ['bearer'],
    });
  });

  it('redacts Basic credentials in an Authorization header', () => {
    const credential = Buffer.from('ada:' + 'lovelace'.repeat(2)).toString('base64');
    expect(redactSecrets(`Authorization: Basic ${credential}`)).toEqual({
      text: 'Authorization: Basic [redacted:bearer]',
      kinds: ['bearer'],
    });
  });

  it('redacts a bearer token outside a header', () => {
    const token = 'tok' + '9f8e7d6c'.repeat(3);
    expect(redactSecrets(`use Bearer ${token} for the API`).text).toBe('use Bearer [redacted:bearer] for the API');
  });

  it('leaves the English word bearer alone', () => {
    for (const text of ['She was the bearer of good news.', 'Bearer instruments are payable to whoever holds them.']) {
      expect(redactSecrets(text)).toEqual({ text, kinds: [] });
    }
  });

  it.each([
    ['password=hunter2', 'password=[redacted:password]'],
    ['passwd: hunter2', 'passwd: [redacted:password]'],
    ['pwd=s3cr3t!', 'pwd=[redacted:password]'],
    ['secret=abc123', 'secret=[redacted:password]'],
    ['api_key=abc123', 'api_key=[redacted:password]'],
    ['apikey: abc123', 'apikey: [redacted:password]'],
    ['token=abc123', 'token=[redacted:password]'],
    ['client_secret=abc123', 'client_secret=[redacted:password]'],
    ['PASSWORD = Hunter2', 'PASSWORD = [redacted:password]'],
    ['DB_PASSWORD=hunter2', 'DB_PASSWORD=[redacted:password]'],
    ['password="correct horse battery"', 'password="[redacted:password]"'],
    ["password: 'correct horse'", "password: '[redacted:password]'"],
    ['{"password": "hunter2", "user": "ada"}', '{"password": "[redacted:password]", "user": "ada"}'],
    ['https://example.com/cb?token=abc123&page=2', 'https://example.com/cb?token=[redacted:password]&page=2'],
    ['user=ada;password=hunter2;host=db', 'user=ada;password=[redacted:password];host=db'],
    ['password=hunter2, then log in', 'password=[redacted:password], then log in'],
    ['postgres://roster:hunter2@localhost/roster', 'postgres://roster:[redacted:password]@localhost/roster'],
  ])('redacts the value of %j', (input, expected) => {
    expect(redactSecrets(`note: ${input} ok`)).toEqual({ text: `note: ${expected} ok`, kinds: ['password'] });
  });

  it('leaves a value that is already redacted as it is', () => {
    const text = 'password=[redacted:password] token: [redacted:jwt]';
    expect(redactSecrets(text)).toEqual({ text, kinds: [] });
  });

  it('leaves words that only resemble keys alone', () => {
    for (const text of [
      'Passwords should be long.',
      'The password hint is the name of her first cat.',
      'Keep your api keys safe and rotate tokens often.',
    ]) {
      expect(redactSecrets(text)).toEqual({ text, kinds: [] });
    }
  });
});

describe('redactSecrets: what is not a secret', () => {
  it.each([
    ['a Luhn-failing digit run', '1234 5678 9012 3456'],
    ['a Luhn-failing card-shaped number', breakLuhn(visa)],
    ['a Luhn-failing grouped number', group(breakLuhn(visa), [4, 4, 4, 4], ' ')],
    ['an Italian mobile number', 'call +39 347 123 4567 after six'],
    ['an international number with its prefix', '+1 415 555 0132 4567 890'],
    ['an ISO date', 'born 1815-12-10, died 1852-11-27'],
    ['a date and time', '2024-01-15 10:30:00'],
    ['a European date', '15/01/2024'],
    ['a fixed UUID', '123e4567-e89b-12d3-a456-426614174000'],
    ['an all-digit UUID', '12345678-1234-5678-1234-567812345678'],
    ['a random UUID', randomUUID()],
    ['an order number', 'order #100234567 shipped'],
    ['a long order number starting 9', 'order 9' + visa.slice(1)],
    ['a Luhn-valid number glued to letters', `ref${visa}x`],
    ['a Luhn-valid number inside a hyphenated identifier', `inv-2024-${visa}`],
    ['a Luhn-valid fraction', `pi is 3.${visa}`],
    ['ordinary prose', "Ada's phone is 555-1234 and she likes tea at 5pm on 12/03."],
    ['Italian prose', 'Il compleanno di Ada è il 10 dicembre; il cancello è al numero 47.'],
    ['a ticket code', 'ticket ABC-1234-XYZ and task-list-for-the-quarterly-report'],
    ['a short sk- word', 'sk-8 skates'],
  ])('does not redact %s', (_name, text) => {
    expect(redactSecrets(text)).toEqual({ text, kinds: [] });
    expect(containsSecret(text)).toBe(false);
  });

  it('redacts the Luhn-valid number beside the failing one (positive control)', () => {
    const text = `old card ${group(breakLuhn(visa), [4, 4, 4, 4], ' ')}, new card ${group(visa, [4, 4, 4, 4], ' ')}`;
    expect(redactSecrets(text).text).toBe(`old card ${group(breakLuhn(visa), [4, 4, 4, 4], ' ')}, new card [redacted:card-number]`);
  });
});

describe('redactSecrets: reporting and idempotence', () => {
  const everything = [
    'password=hunter2 for the wifi',
    `openai ${'sk-proj-' + 'a'.repeat(40)} and ${'sk-ant-' + 'b'.repeat(30)}`,
    `aws ${'AKIA' + 'IOSFODNN7' + 'EXAMPLE'} aws_secret_access_key=${'W'.repeat(40)}`,
    `github ${'ghp_' + 'c'.repeat(36)} slack ${'xoxb-' + '1'.repeat(12)} ${'xapp-' + '2'.repeat(12)}`,
    `telegram ${'987654321:' + 'D'.repeat(35)}`,
    `jwt ${jwt}`,
    `Authorization: Bearer ${'e'.repeat(8) + '12345'}`,
    pemBlock('OPENSSH PRIVATE KEY'),
    `card ${group(visa, [4, 4, 4, 4], '-')} and again ${visa}`,
    'another password: letmein',
  ].join('\n');

  it('lists each kind once, in order of first appearance in the text', () => {
    expect(redactSecrets(everything).kinds).toEqual([
      'password',
      'openai-key',
      'anthropic-key',
      'aws-access-key',
      'aws-secret-key',
      'github-token',
      'slack-token',
      'telegram-bot-token',
      'jwt',
      'bearer',
      'private-key',
      'card-number',
    ]);
  });

  it('leaves none of the secrets in the text', () => {
    const { text } = redactSecrets(everything);
    for (const fragment of ['hunter2', 'aaaa', 'bbbb', 'IOSFODNN7', 'WWWW', 'cccc', '1111', 'DDDD', 'eyJ', 'eeee', 'qqqq', visa.slice(0, 8), 'letmein']) {
      expect(text).not.toContain(fragment);
    }
    expect(text).toContain('for the wifi');
    expect(text).toContain('another password: [redacted:password]');
  });

  it('is idempotent', () => {
    const samples = [
      everything,
      ...wholeSecrets.map((c) => `x ${c.secret} y`),
      'token=abc&x=1 Authorization: Basic dXNlcjpwYXNzd29yZA==',
      'password="quoted value" and token = "[redacted:jwt]"',
    ];
    for (const sample of samples) {
      const once = redactSecrets(sample);
      const twice = redactSecrets(once.text);
      expect(twice.text).toBe(once.text);
      expect(twice.kinds).toEqual([]);
    }
  });

  it('containsSecret agrees with redactSecrets', () => {
    expect(containsSecret(`my key is ${'ghp_' + 'f'.repeat(36)}`)).toBe(true);
    expect(containsSecret('my key is under the mat')).toBe(false);
    expect(containsSecret(redactSecrets(everything).text)).toBe(false);
  });
});
