import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/services.js';
import { cliArgs } from '../helpers/cli-bundle.js';
import { testDbKind } from '../helpers/databases.js';
import { tempDirs } from '../helpers/temp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const temp = tempDirs('evalgate-budget-cli-');
afterAll(() => temp.removeAll());

function evalgate(
  dataDir: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_')));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...cliArgs(), ...args],
      { cwd: ROOT, env: { ...env, EVALGATE_DATA_DIR: dataDir, EVALGATE_LOG_LEVEL: 'silent' } },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

// The admin commands work on the database directly, the same on both; run once, on SQLite.
describe.skipIf(testDbKind() === 'postgres')('budget commands', () => {
  it('set budgets on keys and projects that the API then shows; refuse malformed ones', {
    timeout: 90_000,
  }, async () => {
    const dir = temp.make();
    const created = await evalgate(
      dir,
      'keys',
      'create',
      '--project',
      'shop',
      '--name',
      'capped',
      '--budget',
      '5/day',
    );
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('a budget of 5 USD per day');
    const keyId = /key_\w+/.exec(created.stdout)![0];
    const secret = created.stdout.trimEnd().split('\n').at(-1)!;
    const listed = await evalgate(dir, 'keys', 'list', '--project', 'shop');
    expect(listed.stdout).toMatch(new RegExp(`${keyId}\\t.*\\t5 USD per day, 0 spent since \\S+, resets `));
    const [total, project, bad, badPeriod] = await Promise.all([
      evalgate(dir, 'keys', 'budget', keyId, '2.5/total'),
      evalgate(dir, 'projects', 'budget', 'shop', '100'),
      evalgate(dir, 'keys', 'budget', keyId, 'lots'),
      evalgate(dir, 'projects', 'budget', 'shop', '5/week'),
    ]);
    expect(total.stdout).toContain('2.5 USD in total, 0 spent since 1970-01-01T00:00:00.000Z');
    expect(project.stdout).toMatch(/^shop: 100 USD per month/);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/amount must be a number/);
    expect(badPeriod.code).not.toBe(0);
    expect(badPeriod.stderr).toMatch(/period must be one of day, month, total/);

    const services = await createServices(
      loadConfig({ EVALGATE_DATA_DIR: dir, EVALGATE_LOG_LEVEL: 'silent' }),
    );
    const app = await createApp(services);
    try {
      await app.server.listen({ host: '127.0.0.1', port: 0 });
      const { port } = app.server.server.address() as { port: number };
      const get = async (path: string): Promise<{ budget: unknown }> =>
        (
          await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${secret}` } })
        ).json() as Promise<{ budget: unknown }>;
      expect((await get(`/v1/api-keys/${keyId}`)).budget).toEqual({ limit_usd: 2.5, period: 'total' });
      expect((await get('/v1/projects/current/budget')).budget).toEqual({ limit_usd: 100, period: 'month' });
    } finally {
      await app.close();
      await services.close();
    }
    const removed = await evalgate(dir, 'keys', 'budget', keyId, 'none');
    expect(removed.stdout).toContain('no budget');
  });
});
