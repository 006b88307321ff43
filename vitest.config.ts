import { defineConfig } from 'vitest/config';

// The whole suite runs once per database: the same tests against SQLite and against PostgreSQL.
// EVALGATE_TEST_DB=sqlite|postgres narrows a run to one of them.
const only = process.env.EVALGATE_TEST_DB;
const dbs = only ? [only] : ['sqlite', 'postgres'];

export default defineConfig({
  test: {
    projects: dbs.map((db) => ({
      extends: true,
      test: { name: db, env: { EVALGATE_TEST_DB: db } },
    })),
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // EVALGATE_TEST_RETRY=n runs a failed test up to n more times (CI sets 1: on a shared 2-core machine a
    // timing-sensitive test can miss a deadline once; a test that fails twice fails the build).
    retry: Number(process.env.EVALGATE_TEST_RETRY ?? 0),
    // EVALGATE_TEST_WORKERS=n runs n test files at once (vitest's default is one fewer than the cores).
    ...(process.env.EVALGATE_TEST_WORKERS ? { maxWorkers: Number(process.env.EVALGATE_TEST_WORKERS) } : {}),
    globalSetup: ['test/helpers/global-setup.ts'],
  },
});
