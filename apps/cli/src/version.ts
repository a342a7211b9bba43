import fs from 'node:fs';

/** The version of the `roster` command, read from its own package.json (dist/ and src/ sit beside it). */
function readVersion(): string {
  const manifest: unknown = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const version = typeof manifest === 'object' && manifest !== null ? (manifest as { version?: unknown }).version : undefined;
  return typeof version === 'string' ? version : 'unknown';
}

export const version = readVersion();
