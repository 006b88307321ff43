import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { testDbKind } from '../helpers/databases.js';
import { RESOLVE_LOG_HOOK } from '../helpers/resolve-log.js';
import { tempDirs } from '../helpers/temp.js';
import { ROOT } from './cli-helpers.js';

/**
 * The API commands talk to a server through the client: none of them loads the server (Fastify, the
 * database drivers, the app), which would cost every invocation about a second. Each command group's
 * `--help` runs under an import hook that logs what is resolved.
 */

const run = promisify(execFile);
const temp = tempDirs();
afterAll(() => temp.removeAll());

/**
 * Commands that are a server (the gateway, a run worker, the code evaluators' sandbox runner) or
 * administer its database: they load it by design.
 */
const SERVER_COMMANDS = [
  'serve',
  'migrate',
  'worker',
  'sandbox-runner',
  'dashboard',
  'projects',
  'keys',
  'help',
];
/** What only the server loads. */
const SERVER_MODULES = ['/src/app.ts', '/node_modules/fastify/', '/node_modules/better-sqlite3/'];

function preload(dir: string, log: string): string {
  const file = path.join(dir, 'preload.mjs');
  fs.writeFileSync(
    file,
    `import { register } from 'node:module';\n` +
      `register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(RESOLVE_LOG_HOOK)}), { data: { log: ${JSON.stringify(log)} } });\n`,
  );
  return file;
}

describe.skipIf(testDbKind() === 'postgres')('the API commands are light', { timeout: 120_000 }, () => {
  it('loads no server module for any API command group', async () => {
    const help = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', '--help'], { cwd: ROOT });
    const groups = [...help.stdout.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)]
      .map((m) => m[1]!)
      .filter((name) => !SERVER_COMMANDS.includes(name));
    expect(groups).toEqual(expect.arrayContaining(['runs', 'sessions', 'traces', 'queues', 'review']));
    const heavy: string[] = [];
    for (const group of groups) {
      const dir = temp.make('evalgate-light-');
      const log = path.join(dir, 'resolved.log');
      fs.writeFileSync(log, '');
      const args = ['--import', 'tsx', '--import', preload(dir, log), 'src/cli/main.ts', group, '--help'];
      await run(process.execPath, args, { cwd: ROOT });
      const resolved = fs.readFileSync(log, 'utf8').split('\n');
      expect(resolved.length, group).toBeGreaterThan(10);
      const server = resolved.filter((url) => SERVER_MODULES.some((m) => url.includes(m)));
      if (server.length > 0) heavy.push(`${group}: ${server[0]}`);
    }
    expect(heavy).toEqual([]);
  });
});
