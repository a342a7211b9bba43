import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The page is a static bundle in dist/public, which @roster/web exports as `publicDirectory`
// and the server serves. `vite` (dev) proxies the API to a Roster running on the default port.
export default defineConfig({
  root: fileURLToPath(new URL('./src/page', import.meta.url)),
  base: '/',
  publicDir: false,
  build: {
    outDir: fileURLToPath(new URL('./dist/public', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: true,
  },
  server: {
    proxy: { '/api': 'http://127.0.0.1:8420', '/healthz': 'http://127.0.0.1:8420' },
  },
});
