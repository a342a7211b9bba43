import { describe, expect, it } from 'vitest';
import { isLoopbackAddress, isLoopbackUrl } from './loopback.js';

describe('isLoopbackAddress', () => {
  it('accepts localhost, 127/8, ::1 and 127/8 mapped into IPv6, however they are written', () => {
    for (const host of [
      'localhost',
      'LOCALHOST',
      '127.0.0.1',
      '127.1.2.3',
      '127.255.255.254',
      '::1',
      '[::1]',
      '0:0:0:0:0:0:0:1',
      '::ffff:127.0.0.1',
      '[::ffff:7f00:1]',
      '::ffff:127.9.8.7',
    ]) {
      expect(isLoopbackAddress(host), host).toBe(true);
    }
  });

  it('refuses other addresses, other names and strings that are not addresses', () => {
    for (const host of [
      '10.0.0.5',
      '128.0.0.1',
      '0.0.0.0',
      '::',
      '::2',
      '::ffff:10.0.0.1',
      '::ffff:128.0.0.1',
      'fe80::1',
      'localhost.example.com',
      '127.0.0.1.nip.io',
      'gpu-box',
      '',
      '127.0.0',
      '[127.0.0.1]',
    ]) {
      expect(isLoopbackAddress(host), host).toBe(false);
    }
  });
});

describe('isLoopbackUrl', () => {
  it('reads the host of an http(s) URL, ports and paths aside', () => {
    for (const url of ['http://127.0.0.1:11434', 'http://localhost:1234/v1', 'http://[::1]:11434/api', 'https://127.2.0.1', new URL('http://[::ffff:127.0.0.1]:8080')]) {
      expect(isLoopbackUrl(url), String(url)).toBe(true);
    }
    for (const url of ['http://gpu-box:11434', 'http://10.0.0.5:11434', 'https://api.openai.com/v1', 'http://user:pw@evil.example/127.0.0.1', 'not a url', '']) {
      expect(isLoopbackUrl(url), String(url)).toBe(false);
    }
  });
});
