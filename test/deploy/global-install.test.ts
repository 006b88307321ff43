import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { testDbKind } from '../helpers/databases.js';
import { unusedPort } from '../helpers/ports.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

// The CLI on the PATH, as the README shows it: `npm pack` in a clone, `npm install -g` of the tarball,
// then `evalgate` from anywhere. Into a fresh prefix, without the clone's node_modules on the way. It
// needs nothing of the test databases: the postgres project runs it (the SQLite half runs twice in CI).
const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const temp = tempDirs('evalgate-global-');
let server: ChildProcess | null = null;

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server?.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  temp.removeAll();
});

describe.skipIf(testDbKind() !== 'postgres')('the packed tarball installed globally', () => {
  it('puts evalgate on the PATH: --help, then serve from an empty directory', {
    timeout: 600_000,
  }, async () => {
    const dir = temp.make();
    // dist/ and web/dist are built already (npm ci runs prepare): `npm pack` (which runs prepare again)
    // packs them as they are, without building them again.
    await run('node', ['scripts/prepare.mjs'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024, timeout: 600_000 });
    const bundle = path.join(ROOT, 'dist/bundle/evalgate.js');
    const builtAt = fs.statSync(bundle).mtimeMs;
    const packed = await run('npm', ['pack', '--pack-destination', dir], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(packed.stdout).toMatch(/the build in dist\/ is current/);
    expect(fs.statSync(bundle).mtimeMs).toBe(builtAt);
    const tarball = path.join(dir, packed.stdout.trim().split('\n').at(-1)!);
    const listing = (await run('tar', ['tzf', tarball], { maxBuffer: 16 * 1024 * 1024 })).stdout.split('\n');
    // The dashboard and the code evaluators' sandbox runner come along.
    expect(listing).toContain('package/web/dist/index.html');
    expect(listing).toContain('package/python/runner.py');
    expect(listing).toContain('package/dist/bundle/evalgate.js');

    const prefix = path.join(dir, 'prefix');
    const home = path.join(dir, 'home');
    const empty = path.join(dir, 'empty');
    fs.mkdirSync(home);
    fs.mkdirSync(empty);
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_')));
    const env = { ...base, PATH: `${path.join(prefix, 'bin')}:${base.PATH}`, HOME: home };
    // As the README says: the install scripts that must run allowed by name (npm 11 asks), so that npm
    // warns of none. better-sqlite3's installer finds the addon `npm ci` built here in npm's cache of
    // prebuilt binaries (scripts/prepare.mjs put it there) instead of compiling SQLite again.
    const installed = path.join(prefix, 'lib/node_modules/evalgate');
    const install = await run(
      'npm',
      [
        'install',
        '-g',
        '--prefix',
        prefix,
        tarball,
        `--allow-scripts=file:${tarball},better-sqlite3,msgpackr-extract`,
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        '--foreground-scripts',
      ],
      // The user's npm cache (offline copies of the dependencies) but not the clone's directory.
      {
        cwd: empty,
        env: { ...env, npm_config_cache: path.join(process.env.HOME ?? home, '.npm') },
        maxBuffer: 64 * 1024 * 1024,
        timeout: 300_000,
      },
    );
    const said = `${install.stdout}\n${install.stderr}`;
    expect(said).not.toMatch(/allowScripts|install-scripts/);
    expect(said).not.toMatch(/gyp info|gyp ERR|CXX\(target\)/);
    // Unpacked, not compiled: node-gyp leaves its object files beside the addon.
    const release = path.join(installed, 'node_modules/better-sqlite3/build/Release');
    expect(fs.readdirSync(release)).toEqual(['better_sqlite3.node']);
    // None of the clone's dev dependencies came along.
    expect(fs.existsSync(path.join(installed, 'node_modules/vitest'))).toBe(false);
    const bin = path.join(prefix, 'bin', 'evalgate');
    expect(fs.realpathSync(bin)).toBe(path.join(installed, 'dist/bundle/evalgate.js'));

    // `evalgate` by name, found on the PATH.
    const help = await run('evalgate', ['--help'], { cwd: empty, env });
    expect(help.stdout).toMatch(/Usage: evalgate/);
    expect(help.stdout).toMatch(/serve/);

    const port = await unusedPort();
    server = spawn('evalgate', ['serve', '--port', String(port)], {
      cwd: empty,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    server.stdout?.on('data', (d) => {
      output += d;
    });
    server.stderr?.on('data', (d) => {
      output += d;
    });
    const url = `http://127.0.0.1:${port}`;
    await waitFor(
      async () => (await fetch(`${url}/healthz`).catch(() => null))?.status === 200,
      60_000,
      'evalgate serve answering /healthz',
    ).catch((err) => {
      throw new Error(`${(err as Error).message}\n${output}`);
    });
    expect(output).toMatch(/Evalgate listening on/);
    // Its data directory is the empty directory's .evalgate; the dashboard is served from the package.
    expect(fs.existsSync(path.join(empty, '.evalgate', 'evalgate.db'))).toBe(true);
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
  });
});
