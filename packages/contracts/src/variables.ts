import { z } from 'zod';

/** A URL with one of these protocols. */
export function urlWithProtocols(protocols: readonly string[]) {
  return z
    .string()
    .trim()
    .refine((value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    });
}

/** A URL with one of these protocols, or unset (an empty value is unset). */
export function optionalUrl(protocols: readonly string[]) {
  return z
    .union([z.literal(''), urlWithProtocols(protocols)])
    .optional()
    .transform((value) => (value === '' || value === undefined ? undefined : value));
}

/** A secret of at least `minLength` characters, trimmed, or unset (blank is unset). */
export function optionalSecret(minLength = 1) {
  return z
    .string()
    .optional()
    .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()))
    .refine((value) => value === undefined || value.length >= minLength);
}

/** `true`/`1` or `false`/`0`/unset. */
export function flag() {
  return z
    .enum(['true', 'false', '1', '0', ''])
    .default('false')
    .transform((value) => value === 'true' || value === '1');
}
