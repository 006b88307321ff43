import fs from 'node:fs';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

// The whole suite runs once per database: the same tests against SQLite and against PostgreSQL.
// EVALGATE_TEST_DB=sqlite|postgres narrows a run to one of them.
const only = process.env.EVALGATE_TEST_DB;
const dbs = only ? [only] : ['sqlite', 'postgres'];

/**
 * A `describe.skipIf(...)` condition on the suite's database, and the database it skips (alone, or
 * first in an `||`: `describe.skipIf(testDbKind() === 'postgres' || !hasChromium)` skips PostgreSQL too).
 */
const SKIP =
  /^describe\.skipIf\((?:testDbKind\(\)|process\.env\.EVALGATE_TEST_DB) (===|!==) '(sqlite|postgres)'(?:\)| \|\| )/;

/**
 * A file whose behaviour does not depend on the database (a pure unit, a wire translation, the CLI's or
 * a browser's view of the API) says so in a line of its own, with the reason, and runs once, under
 * SQLite: `// Database-independent: <why>`. What differs between the databases (stores, queries,
 * migrations, concurrency, runs, review, traces) keeps running on both.
 */
const ONCE = /^\/\/ Database-independent: \S/m;

/**
 * Test files that have nothing to run against `db`: every top-level `describe` skips it (the files that
 * do not touch a database run once, under SQLite). Left out of that database's project, their modules
 * are not even loaded there.
 */
function skippedOn(db: string): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.test.ts')) {
        const text = fs.readFileSync(file, 'utf8');
        if (db === 'postgres' && ONCE.test(text)) {
          files.push(file);
          continue;
        }
        const tops = text.split('\n').filter((line) => /^describe[.(]/.test(line));
        const skips = (line: string) => {
          const m = SKIP.exec(line);
          return m !== null && (m[1] === '===') === (m[2] === db);
        };
        if (tops.length > 0 && tops.every(skips)) files.push(file);
      }
    }
  };
  walk('test');
  return files;
}

export default defineConfig({
  test: {
    projects: dbs.map((db) => ({
      extends: true,
      test: { name: db, env: { EVALGATE_TEST_DB: db }, exclude: ['**/node_modules/**', ...skippedOn(db)] },
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
    // EVALGATE_TEST_ISOLATE=0 lets a worker run one file after another in one process with the modules it
    // loaded for the first (each file still has its own databases, servers and ports): loading the app's
    // modules again for every file costs about 2 s of CPU per file (see docs/performance.md).
    ...(process.env.EVALGATE_TEST_ISOLATE === '0' ? { isolate: false } : {}),
    globalSetup: ['test/helpers/global-setup.ts'],
  },
});
