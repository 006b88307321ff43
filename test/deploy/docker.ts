import { execFile, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/**
 * A Docker engine and Compose to drive it, or why there is none. `bridge`: whether containers can have a
 * network of their own (else compose.host-network.yaml puts them on the host's).
 */
export type Engine =
  | { ok: true; compose: string[]; started: number | null; log: string | null; bridge: boolean }
  | { ok: false; reason: string };

/** Whether the engine has its default bridge network (dockerd was not started with --bridge=none). */
function hasBridge(): boolean {
  return answers('docker', ['network', 'inspect', 'bridge']);
}

function answers(cmd: string, args: string[]): boolean {
  return spawnSync(cmd, args, { stdio: 'ignore', timeout: 30_000 }).status === 0;
}

function onPath(cmd: string): boolean {
  return (process.env.PATH ?? '').split(':').some((d) => d !== '' && fs.existsSync(path.join(d, cmd)));
}

/**
 * The engine that runs here, or one started for the test (as root): `dockerd` without iptables rules,
 * with its bridge where one can be created, else without (the containers then use the host's network).
 * Compose is the v2 plugin (`docker compose`) or the standalone `docker-compose` (1.28 or newer: profiles).
 */
export async function dockerEngine(): Promise<Engine> {
  if (!onPath('docker')) return { ok: false, reason: 'no docker client on the PATH' };
  const compose = answers('docker', ['compose', 'version'])
    ? ['docker', 'compose']
    : onPath('docker-compose')
      ? ['docker-compose']
      : null;
  if (!compose) return { ok: false, reason: 'neither `docker compose` nor `docker-compose` is installed' };
  if (answers('docker', ['info']))
    return { ok: true, compose, started: null, log: null, bridge: hasBridge() };
  if (!onPath('dockerd')) return { ok: false, reason: 'no Docker engine runs and dockerd is not installed' };
  if (process.getuid?.() !== 0)
    return { ok: false, reason: 'no Docker engine runs and starting one needs root' };
  const log = path.join(os.tmpdir(), `evalgate-dockerd-${process.pid}.log`);
  // overlay2 where the kernel and the file system allow it; vfs (a full copy per layer: slow, but it
  // works everywhere) otherwise.
  const attempts = ['overlay2', 'vfs'].flatMap((driver) =>
    [[], ['--bridge=none']].map((bridge) => [`--storage-driver=${driver}`, '--iptables=false', ...bridge]),
  );
  for (const args of attempts) {
    const out = fs.openSync(log, 'a');
    const child = spawn('dockerd', args, { detached: true, stdio: ['ignore', out, out] });
    child.unref();
    fs.closeSync(out);
    const until = Date.now() + 60_000;
    while (Date.now() < until && child.exitCode === null) {
      if (answers('docker', ['info'])) {
        return { ok: true, compose, started: child.pid ?? null, log, bridge: hasBridge() };
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    if (child.exitCode === null && child.pid) process.kill(child.pid, 'SIGTERM');
    await new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r(null)));
  }
  const tail = fs.readFileSync(log, 'utf8').split('\n').slice(-5).join('\n');
  return { ok: false, reason: `dockerd did not start (see ${log}):\n${tail}` };
}

/** Stops a dockerd that dockerEngine started (its containers are stopped by it). */
export async function stopEngine(engine: Engine): Promise<void> {
  if (!engine.ok || engine.started === null) return;
  const pid = engine.started;
  process.kill(pid, 'SIGTERM');
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Runs a command, resolving to its stdout; a failure carries its stderr. */
export async function sh(
  cmd: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<string> {
  return (await shBoth(cmd, args, options)).stdout;
}

/** Runs a command, resolving to its stdout and stderr; a failure carries both. */
export async function shBoth(
  cmd: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await exec(cmd, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      timeout: options.timeoutMs ?? 600_000,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}\n${e.stdout ?? ''}`);
  }
}
