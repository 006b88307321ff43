import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliArgs } from '../helpers/cli-bundle.js';
import { tempDir } from '../helpers/temp.js';
import { ROOT } from './cli-helpers.js';

/** Runs `evalgate serve --port 0` at the info log level, stops it with SIGINT once it listens. */
function serveAndStop(
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<{ stdout: string; code: number | null; dir: string }> {
  const dir = tempDir('evalgate-serve-').dir;
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_')));
  const child = spawn(process.execPath, [...cliArgs(), 'serve', '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...env, EVALGATE_DATA_DIR: dir, EVALGATE_LOG_LEVEL: 'info', ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stopping = false;
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    if (!stopping && /Evalgate listening/.test(stdout)) {
      stopping = true;
      // A request first, so that a log line has a reason to exist.
      const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1];
      void fetch(`${url}/healthz`).finally(() => child.kill('SIGINT'));
    }
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ stdout, code, dir });
    }),
  );
}

// `serve` here starts with the environment cleared: always on SQLite, so it runs once (the SQLite project).
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('serve output', () => {
  it('prints the human banner first, then a shutdown line on Ctrl-C', { timeout: 90_000 }, async () => {
    const { stdout, code } = await serveAndStop([]);
    expect(code).toBe(0);
    expect(stdout.split('\n')[0]).toMatch(/^Evalgate listening on http:\/\/127\.0\.0\.1:\d+ /);
    expect(stdout).toContain('Evalgate stopping (SIGINT): finishing requests in flight\n');
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('Evalgate stopped');
  });

  it('stops when `npm start` is stopped by its PID (the server is not left behind)', {
    timeout: 90_000,
  }, async () => {
    const dir = tempDir('evalgate-npm-start-').dir;
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_')));
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env: { ...env, EVALGATE_DATA_DIR: dir, EVALGATE_PORT: '0', EVALGATE_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const killer = setTimeout(() => npm.kill('SIGKILL'), 60_000);
    let stdout = '';
    npm.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    const exited = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)));
    while (!/Evalgate listening on (http:\/\/\S+)/.test(stdout) && npm.exitCode === null) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const url = /Evalgate listening on (http:\/\/[^\s/]+)/.exec(stdout)?.[1] ?? '';
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    npm.kill('SIGTERM');
    await exited;
    clearTimeout(killer);
    // The server itself received the signal: it shut down in order, and nothing answers any more.
    await new Promise((r) => setTimeout(r, 300));
    expect(stdout).toContain('Evalgate stopping (SIGTERM)');
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it.each([
    ['--log-format json', ['--log-format', 'json'], {}],
    ['EVALGATE_LOG_FORMAT=json', [], { EVALGATE_LOG_FORMAT: 'json' }],
  ])('writes JSON lines only with %s', { timeout: 90_000 }, async (_how, args, extraEnv) => {
    const { stdout, code, dir } = await serveAndStop(args, extraEnv);
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n');
    const parsed = lines.map((line) => JSON.parse(line) as { msg: string; banner?: string });
    expect(parsed.map((l) => l.msg)).toEqual(
      expect.arrayContaining(['Evalgate listening', 'Evalgate stopped']),
    );
    expect(parsed.find((l) => l.msg === 'Evalgate listening')?.banner).toMatch(/Created project 'default'/);
    // Logs are collected and kept (docker logs, journald): the first key and the sign-in link are not in
    // them, but in files of the data directory that only the server's user reads.
    expect(stdout).not.toMatch(/eg_[0-9A-Za-z]{8}/);
    expect(stdout).not.toMatch(/token=/);
    const keyFile = path.join(dir, 'first-api-key');
    const linkFile = path.join(dir, 'sign-in-link');
    expect(fs.readFileSync(keyFile, 'utf8')).toMatch(/^eg_[0-9A-Za-z]+\n$/);
    expect(fs.readFileSync(linkFile, 'utf8')).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/dashboard\/api\/auth\/local\?token=\S+\n$/,
    );
    for (const file of [keyFile, linkFile]) expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(stdout).toContain(keyFile);
    expect(stdout).toContain(linkFile);
  });

  it('with --workers 2 and JSON logs, the primary too puts the key and the link in files, not its output', {
    timeout: 90_000,
  }, async () => {
    const { stdout, code, dir } = await serveAndStop(['--workers', '2', '--log-format', 'json']);
    expect(code).toBe(0);
    const listening = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { msg: string; banner?: string })
      .find((l) => l.msg === 'Evalgate listening');
    expect(listening?.banner).toMatch(/workers: 2/);
    expect(stdout).not.toMatch(/eg_[0-9A-Za-z]{8}|token=/);
    expect(fs.readFileSync(path.join(dir, 'first-api-key'), 'utf8')).toMatch(/^eg_/);
    expect(fs.statSync(path.join(dir, 'sign-in-link')).mode & 0o777).toBe(0o600);
  });
});
