import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { type App, createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/services.js';
import { cliArgs } from '../helpers/cli-bundle.js';
import { testDbKind } from '../helpers/databases.js';
import { tempDirs } from '../helpers/temp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KEY = /^eg_[0-9A-Za-z]{43}$/;
const temp = tempDirs('evalgate-cli-');

/** The environment of a CLI run: the data directory, and none of this process's EVALGATE_* settings. */
function cliEnv(dataDir: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_')));
  return { ...env, EVALGATE_DATA_DIR: dataDir, EVALGATE_LOG_LEVEL: 'silent' };
}

const CLI = cliArgs();

function evalgate(
  dataDir: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...CLI, ...args],
      { cwd: ROOT, env: cliEnv(dataDir) },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1)!;

afterAll(() => temp.removeAll());

// The CLI works on either database the same way; it runs once, on SQLite, to keep the suite fast.
// Its two tests use data directories of their own and run side by side.
describe.skipIf(testDbKind() === 'postgres')('evalgate CLI', { concurrent: true }, () => {
  it('manages projects and keys; the keys it prints work against the API', { timeout: 90_000 }, async () => {
    const dir = temp.make();
    const created = await evalgate(dir, 'projects', 'create', 'alpha', '--org', 'acme');
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^prj_\w+\talpha\tacme\n$/);

    const [again, reader, admin, invalid] = await Promise.all([
      evalgate(dir, 'projects', 'create', 'alpha'),
      evalgate(
        dir,
        'keys',
        'create',
        '--project',
        'alpha',
        '--name',
        'reader',
        '--permissions',
        'evaluators:read',
      ),
      evalgate(dir, 'keys', 'create', '--project', 'beta'),
      evalgate(
        temp.make(),
        'keys',
        'create',
        '--project',
        'alpha',
        '--permissions',
        'evaluators:read,evaluators:fly',
      ),
    ]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/already exists/);
    expect(invalid.code).not.toBe(0);
    expect(invalid.stderr).toMatch(/unknown action 'fly'/);
    expect(invalid.stdout).not.toMatch(/eg_/);
    for (const res of [reader, admin]) {
      expect(res.code, res.stderr).toBe(0);
      expect(lastLine(res.stdout)).toMatch(KEY);
    }
    const readerKey = lastLine(reader.stdout);
    const readerId = /key_\w+/.exec(reader.stdout)![0];
    // The project of `keys create` is created when missing.
    const [projects, listed] = await Promise.all([
      evalgate(dir, 'projects', 'list'),
      evalgate(dir, 'keys', 'list', '--project', 'alpha'),
    ]);
    expect(projects.stdout).toMatch(/\talpha\tacme\t/);
    expect(projects.stdout).toMatch(/\tbeta\tdefault\t/);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(readerId);
    expect(listed.stdout).toMatch(/\treader\t.*\tevaluators:read\tactive/);
    expect(listed.stdout).not.toContain(readerKey.slice(10));

    // An app on the same database (and the pepper the CLI generated in the data directory).
    const services = await createServices(
      loadConfig({ EVALGATE_DATA_DIR: dir, EVALGATE_LOG_LEVEL: 'silent', EVALGATE_KEY_CACHE_MS: '0' }),
    );
    const app: App = await createApp(services);
    try {
      await app.server.listen({ host: '127.0.0.1', port: 0 });
      const { port } = app.server.server.address() as { port: number };
      const get = (key: string) =>
        fetch(`http://127.0.0.1:${port}/v1/evaluators`, { headers: { authorization: `Bearer ${key}` } });
      expect((await get(readerKey)).status).toBe(200);
      const write = await fetch(`http://127.0.0.1:${port}/v1/evaluators`, {
        method: 'POST',
        headers: { authorization: `Bearer ${readerKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'judge', model: 'm', prompt: 'p' }),
      });
      expect(write.status).toBe(403);
      expect((await get(lastLine(admin.stdout))).status).toBe(200);

      const revoked = await evalgate(dir, 'keys', 'revoke', readerId);
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(revoked.stdout).toContain(`Revoked ${readerId}`);
      expect((await get(readerKey)).status).toBe(401);
    } finally {
      await app.close();
      await services.close();
    }

    const [after, unknownKey, unknownProject] = await Promise.all([
      evalgate(dir, 'keys', 'list', '--project', 'alpha'),
      evalgate(dir, 'keys', 'revoke', 'key_00000000000000000000000000'),
      evalgate(dir, 'keys', 'list', '--project', 'nope'),
    ]);
    expect(after.stdout).toMatch(new RegExp(`${readerId}\\t.*\\trevoked `));
    expect(unknownKey.code).not.toBe(0);
    expect(unknownKey.stderr).toMatch(/not found/);
    expect(unknownProject.code).not.toBe(0);
    expect(unknownProject.stderr).toMatch(/project 'nope' not found/);

    // The database file holds neither key.
    const file = fs.readFileSync(path.join(dir, 'evalgate.db')).toString('latin1');
    const wal = fs.existsSync(path.join(dir, 'evalgate.db-wal'))
      ? fs.readFileSync(path.join(dir, 'evalgate.db-wal')).toString('latin1')
      : '';
    for (const key of [readerKey, lastLine(admin.stdout)]) expect(file + wal).not.toContain(key.slice(10));
  });

  it('serve prints a key once, on the first start against an empty database', {
    timeout: 90_000,
  }, async () => {
    const dir = temp.make();
    const first = await serve(dir);
    let key: string;
    try {
      await first.waitFor(/curl -H/);
      key = /^ {2}(eg_\S+)$/m.exec(first.output())![1]!;
      expect(key).toMatch(KEY);
      const health = await fetch(`${first.url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ ok: true });
      const list = await fetch(`${first.url}/v1/evaluators`, { headers: { authorization: `Bearer ${key}` } });
      expect(list.status).toBe(200);
    } finally {
      expect(await first.stop()).toBe(0);
    }

    const second = await serve(dir);
    try {
      expect((await fetch(`${second.url}/healthz`)).status).toBe(200);
      const list = await fetch(`${second.url}/v1/evaluators`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(list.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(second.output()).not.toMatch(/eg_|Created project/);
    } finally {
      expect(await second.stop()).toBe(0);
    }
  });
});

interface Served {
  url: string;
  output(): string;
  waitFor(pattern: RegExp): Promise<void>;
  stop(): Promise<number | null>;
}

/** Starts `evalgate serve --port 0` and resolves once it listens. */
async function serve(dataDir: string): Promise<Served> {
  const child: ChildProcess = spawn(process.execPath, [...CLI, 'serve', '--port', '0'], {
    cwd: ROOT,
    env: cliEnv(dataDir),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters: (() => void)[] = [];
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    for (const w of waiters) w();
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const waitFor = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => pattern.test(out) && resolve();
      waiters.push(check);
      check();
      exited.then((code) => reject(new Error(`serve exited ${code}: ${err}${out}`)));
    });
  await waitFor(/listening on http:\/\/\S+/);
  const url = /listening on (http:\/\/\S+)/.exec(out)![1]!;
  return {
    url,
    output: () => out,
    waitFor,
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
