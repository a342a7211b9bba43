import { defineConfig } from 'vitest/config';
import { LongestFirst } from './tests/support/sequencer.js';

export default defineConfig({
  test: {
    include: ['packages/*/src/**/*.test.ts', 'apps/*/src/**/*.test.ts', 'tests/**/*.test.ts'],
    // tests/server needs a server Postgres with pgvector: `npm run test:server` (vitest.server.config.ts).
    exclude: ['**/node_modules/**', '**/dist/**', 'tests/server/**'],
    // PGlite boots a Postgres in WebAssembly per test database, and the CLI tests run a dozen processes each: room on two busy cores.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    globalSetup: ['tests/support/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    // The longest files first, by a recorded run: a long file started last would run alone at the end.
    sequence: { sequencer: LongestFirst },
  },
});
