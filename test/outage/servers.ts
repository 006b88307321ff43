/**
 * Private PostgreSQL and Redis servers for outage tests: each on a free port in a temporary directory,
 * so that stopping one never touches the suite's shared servers (5432, 6379).
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { FreshDatabase } from '../helpers/databases.js';
import { unusedPort } from '../helpers/ports.js';

const run = promisify(execFile);

/** The newest installed PostgreSQL's bin directory (EVALGATE_TEST_PG_BIN overrides). */
function postgresBin(): string {
  if (process.env.EVALGATE_TEST_PG_BIN) return process.env.EVALGATE_TEST_PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) throw new Error(`no PostgreSQL server binaries under ${root}`);
  return path.join(root, versions[0]!, 'bin');
}

export interface PrivatePostgres {
  port: number;
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url(database?: string): string;
  /** A new database on this server, as the harness takes it (`drop` removes its data dir only). */
  freshDatabase(): Promise<FreshDatabase>;
  /** `pg_ctl stop -m fast`: every session is ended (57P01), as in a restart. */
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/**
 * `initdb` and `pg_ctl start` on a free port, trust authentication, listening on 127.0.0.1 only. As root,
 * the server runs as the `postgres` user (PostgreSQL refuses to run as root).
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBin();
  const asRoot = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-pg-'));
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    fs.chownSync(dir, uid, gid);
  }
  const data = path.join(dir, 'data');
  const port = await unusedPort();
  const exec = (tool: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', path.join(bin, tool), ...args], { timeout: 60_000 })
      : run(path.join(bin, tool), args, { timeout: 60_000 });
  await exec('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync']);
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c full_page_writes=off`;
  const start = () =>
    exec('pg_ctl', [
      '-D',
      data,
      '-l',
      path.join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      '-o',
      options,
      'start',
    ]);
  const stop = () => exec('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
  await start();
  let running = true;
  // A test process that dies must not leave the server behind.
  const onExit = () => {
    if (!running) return;
    try {
      const args = ['-D', data, '-m', 'immediate', 'stop'];
      if (asRoot) execFileSync('runuser', ['-u', 'postgres', '--', path.join(bin, 'pg_ctl'), ...args]);
      else execFileSync(path.join(bin, 'pg_ctl'), args);
    } catch {
      // Already gone.
    }
  };
  process.once('exit', onExit);

  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
  let created = 0;
  return {
    port,
    url,
    async freshDatabase() {
      const name = `evalgate_outage_${++created}`;
      const { default: pg } = await import('pg');
      const admin = new pg.Client({ connectionString: url() });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-test-'));
      return {
        url: url(name),
        dataDir,
        async drop() {
          fs.rmSync(dataDir, { recursive: true, force: true });
        },
      };
    },
    async stop() {
      await stop();
      running = false;
    },
    async start() {
      await start();
      running = true;
    },
    async destroy() {
      if (running) await stop().catch(() => {});
      running = false;
      process.off('exit', onExit);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivateRedis {
  port: number;
  url: string;
  /** SIGKILL: no shutdown, the connections are cut. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/** `redis-server` on a free port with no persistence. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await unusedPort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-redis-'));
  let child: ChildProcess | null = null;

  async function start(): Promise<void> {
    const c = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${output}`)), 15_000);
      c.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (/Ready to accept connections/i.test(output)) {
          clearTimeout(timer);
          resolve();
        }
      });
      c.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited with ${code}:\n${output}`));
      });
    });
    c.stdout?.resume();
    child = c;
  }

  async function stop(): Promise<void> {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill('SIGKILL');
    await exited;
  }

  const onExit = () => child?.kill('SIGKILL');
  process.once('exit', onExit);
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop,
    start,
    async destroy() {
      await stop();
      process.off('exit', onExit);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
