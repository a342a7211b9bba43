import { pagePaths } from '@roster/web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from './support/api-server.js';

/**
 * The page's caching, over real HTTP from the real server: the shell at each
 * of the page's addresses is revalidated on every load (no-cache), so a
 * browser picks up a new build at once, while the hashed assets it names are
 * kept for good (a new build has new names).
 */

let server: ApiServer;
let address: string;

beforeAll(async () => {
  server = await startApiServer({ HOST: '127.0.0.1' });
  address = await server.app.listen({ host: '127.0.0.1', port: 0 });
}, 60_000);

afterAll(async () => {
  await server?.close();
});

describe('the page over HTTP', () => {
  it('serves the shell no-cache at every address of the page, and the hashed assets it names immutable for a year', async () => {
    const paths = [...new Set(['/', '/login', '/chat', '/memory', ...pagePaths])];
    const assets = new Set<string>();
    for (const path of paths) {
      const shell = await fetch(`${address}${path}`);
      expect(shell.status, path).toBe(200);
      expect(shell.headers.get('content-type'), path).toMatch(/^text\/html/);
      expect(shell.headers.get('cache-control'), path).toBe('no-cache');
      const html = await shell.text();
      for (const [, asset] of html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)) assets.add(asset!);
    }
    // The shell names its script and its styles; each is served, cached for good.
    expect([...assets].some((asset) => asset.endsWith('.js'))).toBe(true);
    expect([...assets].some((asset) => asset.endsWith('.css'))).toBe(true);
    for (const asset of assets) {
      const response = await fetch(`${address}${asset}`);
      expect(response.status, asset).toBe(200);
      await response.arrayBuffer();
      expect(response.headers.get('cache-control'), asset).toBe('public, max-age=31536000, immutable');
    }
  });
});
