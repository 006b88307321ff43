// Database-independent: `serve` and the CLI run with the environment cleared, on the embedded SQLite database.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliArgs } from '../helpers/cli-bundle.js';
import { tempDir } from '../helpers/temp.js';
import { ROOT } from './cli-helpers.js';

// `evalgate dashboard link` beside a running `serve`: it finds where that server listens (its data
// directory records it), and run anywhere else it says where it looked and creates nothing.
const cleanEnv = () =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_')));

function link(dataDir: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [...cliArgs(), 'dashboard', 'link'],
      { cwd: ROOT, env: { ...cleanEnv(), EVALGATE_DATA_DIR: dataDir, EVALGATE_LOG_LEVEL: 'silent' } },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let server: ChildProcess;
let dataDir: string;
let url: string;

beforeAll(async () => {
  dataDir = tempDir('evalgate-link-server-').dir;
  server = spawn(process.execPath, [...cliArgs(), 'serve', '--port', '0'], {
    cwd: ROOT,
    env: { ...cleanEnv(), EVALGATE_DATA_DIR: dataDir, EVALGATE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${stdout}`)), 90_000);
    server.stdout?.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      const found = /Evalgate listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1];
      if (found) {
        clearTimeout(timer);
        resolve(found);
      }
    });
  });
}, 120_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGINT');
    await exited;
  }
});

describe('evalgate dashboard link beside a running server', () => {
  it('links to the port the server really listens on, read from its data directory', {
    timeout: 90_000,
  }, async () => {
    expect(url).not.toMatch(/:8080$/);
    const record = JSON.parse(fs.readFileSync(path.join(dataDir, 'server.json'), 'utf8'));
    expect(record).toMatchObject({ url, pid: server.pid });
    expect(fs.statSync(path.join(dataDir, 'server.json')).mode & 0o777).toBe(0o600);
    const res = await link(dataDir);
    expect(res.code, res.stderr).toBe(0);
    const minted = /^ {2}(http:\/\/\S+)$/m.exec(res.stdout)?.[1] ?? '';
    expect(minted.startsWith(`${url}/dashboard/api/auth/local?token=`), res.stdout).toBe(true);
    const signIn = await fetch(minted, { redirect: 'manual' });
    expect(signIn.headers.get('location')).toBe('/');
  });

  it('run from another data directory: names where it looked, creates no database', {
    timeout: 90_000,
  }, async () => {
    const elsewhere = tempDir('evalgate-link-elsewhere-').dir;
    const res = await link(elsewhere);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`no Evalgate database at ${path.join(elsewhere, 'evalgate.db')}`);
    expect(res.stderr).toContain('nothing was created');
    expect(fs.existsSync(path.join(elsewhere, 'evalgate.db'))).toBe(false);
  });

  it('forgets the record when the server stops cleanly', { timeout: 90_000 }, async () => {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGINT');
    await exited;
    expect(fs.existsSync(path.join(dataDir, 'server.json'))).toBe(false);
  });
});
