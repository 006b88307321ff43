import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDir } from '../helpers/temp.js';

// evalgate/client outside the repository, as docs/client.md says to install it: `npm pack` in a clone,
// `npm install <tarball>` in another project, then an ES module importing 'evalgate/client' makes calls.
const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
let h: Harness;

beforeAll(async () => {
  if (testDbKind() === 'postgres') return;
  h = await startHarness();
  await h.call('POST', '/v1/containers', { body: { label: 'from-the-tarball' } });
});
afterAll(async () => {
  await h?.close();
});

describe.skipIf(testDbKind() === 'postgres')('evalgate/client from a packed tarball', () => {
  it('installs into another project and calls the server', { timeout: 300_000 }, async () => {
    const dir = tempDir('evalgate-pack-').dir;
    // dist/ is built already (npm ci runs prepare): pack it as it is.
    const packed = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], { cwd: ROOT });
    const tarball = path.join(dir, packed.stdout.trim().split('\n').at(-1)!);
    expect(fs.existsSync(tarball)).toBe(true);
    const app = path.join(dir, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(
      path.join(app, 'package.json'),
      JSON.stringify({ name: 'app', private: true, type: 'module' }),
    );
    await run(
      'npm',
      ['install', tarball, '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--omit=dev'],
      { cwd: app, maxBuffer: 16 * 1024 * 1024 },
    );
    fs.writeFileSync(
      path.join(app, 'main.js'),
      [
        "import { Evalgate, NotFoundError } from 'evalgate/client';",
        'const client = new Evalgate();',
        'const page = await client.containers.list();',
        "const missing = await client.containers.get('nope').catch((e) => e instanceof NotFoundError);",
        'console.log(JSON.stringify({ labels: page.data.map((c) => c.label), missing }));',
      ].join('\n'),
    );
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_')));
    const out = await run(process.execPath, ['main.js'], {
      cwd: app,
      env: { ...env, EVALGATE_BASE_URL: h.url, EVALGATE_API_KEY: h.admin.key, HOME: dir },
    });
    expect(JSON.parse(out.stdout)).toEqual({ labels: ['from-the-tarball'], missing: true });
    // The types come along: the declarations the package's exports name are in the tarball.
    expect(fs.existsSync(path.join(app, 'node_modules/evalgate/dist/client/index.d.ts'))).toBe(true);
  });
});
