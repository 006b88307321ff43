import { execFile, execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { sqliteRuntimeWarning } from '../../src/db/database.js';
import { tempDir } from '../helpers/temp.js';
import { ROOT } from './cli-helpers.js';

// node_modules is built for the Node.js running the tests; another major (from the `node` npm package,
// as a user switching Node.js versions would have) loads the same better-sqlite3 build and must be told
// what to do, not shown a bare NODE_MODULE_VERSION error.
const other = process.versions.node.startsWith('22.') ? 'node@24' : 'node@22';

describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')(
  'a native module built for another Node.js',
  () => {
    it('is explained at start, naming both versions and the command that fixes it', {
      timeout: 120_000,
    }, async () => {
      const node = execFileSync('npx', ['-y', '-p', other, 'node', '-p', 'process.execPath'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
      const dir = tempDir('evalgate-abi-').dir;
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_')));
      const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
        execFile(
          node,
          ['--import', 'tsx', 'src/cli/main.ts', 'migrate'],
          { cwd: ROOT, env: { ...env, EVALGATE_DATA_DIR: dir } },
          (err, _stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stderr }),
        );
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        /^evalgate: better-sqlite3 was built for another Node\.js \(module version \d+; this is Node\.js v\d+\.\d+\.\d+, module version \d+\)\. Rebuild it for this Node\.js with `npm rebuild better-sqlite3`/,
      );
    });
  },
);

// `serve` here starts with the environment cleared: always on SQLite, so it runs once (the SQLite project).
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('the SQLite runtime warning', () => {
  it('names Node.js 24.19+ with better-sqlite3 12, and nothing else', () => {
    expect(sqliteRuntimeWarning('24.21.0', '12.11.1')).toMatch(
      /^Node\.js 24\.21\.0 with better-sqlite3 12\.11\.1: the process may abort/,
    );
    expect(sqliteRuntimeWarning('26.0.0', '12.11.1')).not.toBeNull();
    expect(sqliteRuntimeWarning('24.18.1', '12.11.1')).toBeNull();
    expect(sqliteRuntimeWarning('22.23.3', '12.11.1')).toBeNull();
    expect(sqliteRuntimeWarning('20.20.2', '12.11.1')).toBeNull();
    expect(sqliteRuntimeWarning('24.21.0', '13.2.0')).toBeNull();
  });
});
