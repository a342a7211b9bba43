import { defineConfig } from 'vitest/config';

/** `npm run test:server`: the suites that need a server Postgres with pgvector (TEST_DATABASE_URL). */
export default defineConfig({
  test: {
    include: ['tests/server/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    globalSetup: ['tests/support/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
  },
});
