import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkNames } from './names.js';

// The check behind `<!-- test: names-only (…) -->` blocks: what it accepts and what it refuses.
const ROOT = path.resolve(import.meta.dirname, '../..');

describe('the names-only check of docs blocks', () => {
  it('accepts test files, npm scripts and flags that exist', () => {
    const block = [
      'EVALGATE_TEST_DB=sqlite   npx vitest run test/docs/names.test.ts   # this file',
      'npm test',
      'npm run bench:gateway -- --concurrency 64 --rounds 3',
      'npm run bench:gateway -- --workers 1,2 --rate 1000   # a flag of the bench file gateway.ts imports',
      'npm ci && npm run test:python',
    ].join('\n');
    expect(checkNames(block, ROOT)).toEqual([]);
  });

  it('names each test file, script and flag that does not exist, and each command it does not understand', () => {
    const block = [
      'EVALGATE_TEST_DB=sqlite npx vitest run test/docs/names.test.ts test/docs/gone.test.ts',
      'npx vitest run',
      'npm run bench:nothing',
      'npm run bench:gateway -- --concurrency 64 --no-such-flag',
      'rm -rf /tmp/x',
    ].join('\n');
    const problems = checkNames(block, ROOT);
    expect(problems).toHaveLength(5);
    expect(problems[0]).toMatch(/no test file test\/docs\/gone\.test\.ts/);
    expect(problems[1]).toMatch(/names no test file/);
    expect(problems[2]).toMatch(/no "bench:nothing" script/);
    expect(problems[3]).toMatch(/--no-such-flag appears nowhere/);
    expect(problems[4]).toMatch(/not a command this check understands/);
  });
});
