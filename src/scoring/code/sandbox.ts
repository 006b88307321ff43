import { execFile } from 'node:child_process';
import { accessSync, constants, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { packagePath } from '../../shared/package-root.js';
import { PromiseCache } from '../../shared/promise-cache.js';

/** The runner script shipped with the package; bound read-only into every sandbox. */
export const RUNNER_PATH = packagePath('python', 'runner.py');

/** Where things appear inside the sandbox: fixed paths, so nothing of the host's layout leaks. */
const IN_SANDBOX = { runner: '/opt/evalgate/runner.py', venv: '/opt/evalgate/venv' } as const;

/** Resource limits applied inside the sandbox before user code loads (see ARCHITECTURE.md 9). */
export interface SandboxLimits {
  /** RLIMIT_AS, in MiB. */
  memoryMb: number;
  /** RLIMIT_CPU of a worker process over its whole life, in seconds (workers recycle at half). */
  cpuSeconds: number;
  /** RLIMIT_NPROC: processes and threads the sandboxed user may have at once. */
  processes: number;
  /** RLIMIT_FSIZE, in MiB. */
  fileSizeMb: number;
  /** Size of the private tmpfs mounted on /tmp, in MiB. */
  tmpMb: number;
}

export interface SandboxSettings {
  /** The bubblewrap executable (a name looked up on PATH, or a path). */
  bwrap: string;
  limits: SandboxLimits;
  /** When the service runs as root, each worker drops to its own uid from this base. */
  uidBase: number;
}

/**
 * How workers are isolated. `privileged`: the service is root, bubblewrap runs without a user
 * namespace and the runner drops to a per-worker uid (so RLIMIT_NPROC applies: it is not enforced
 * for uid 0). `userns`: the service is not root, bubblewrap makes a user namespace. `unsafe`: no
 * sandbox, rlimits only (EVALGATE_UNSAFE_CODE_EVALUATORS=1).
 */
export type SandboxMode = 'privileged' | 'userns' | 'unsafe';

/** The Python installation that runs evaluators, as it describes itself. */
export interface PythonInstall {
  executable: string;
  version: string;
  /** Directories outside /usr the interpreter needs (its prefix, base prefix, real binary dir). */
  roots: string[];
}

export interface RunnerHeaderBase {
  limits: { as: number; cpu: number; nproc: number | null; fsize: number; nofile: number };
  uid: number | null;
  gid: number | null;
  sandboxed: boolean;
}

/** A command to spawn, with its whole environment. */
export interface Launch {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

/** A command that starts one worker, plus the header fields the runner needs besides the source. */
export interface WorkerLaunch extends Launch {
  header: RunnerHeaderBase;
}

const MiB = 1024 * 1024;
const OPEN_FILES = 256;
const BASE_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8', TMPDIR: '/tmp' };
/** Parallelism comes from running several workers: numeric libraries get one thread each. */
const WORKER_ENV = { ...BASE_ENV, OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1', MKL_NUM_THREADS: '1' };

export function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/** Looks a program up on PATH: spawned processes get no PATH of their own. */
export function which(program: string): string | null {
  const dirs = program.includes('/') ? [''] : (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':');
  for (const dir of dirs) {
    if (dir === '' && !program.includes('/')) continue;
    const candidate = path.resolve(dir, program);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

const DESCRIBE = `import json, os, sys
print(json.dumps({"executable": sys.executable, "version": sys.version,
  "prefixes": [sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))]}))`;

/** Asks the configured interpreter (which may be a shim, e.g. pyenv's) where it really lives. */
export function resolvePython(
  python: string,
  cache: PromiseCache<string, PythonInstall> = new PromiseCache(),
): Promise<PythonInstall> {
  return cache.get(
    python,
    () =>
      new Promise<PythonInstall>((resolve, reject) => {
        const command = which(python) ?? python;
        execFile(command, ['-I', '-c', DESCRIBE], { timeout: 30_000 }, (err, stdout, stderr) => {
          if (err) {
            reject(new Error(`cannot run Python (${python}): ${(stderr || err.message).trim().slice(-300)}`));
            return;
          }
          const info = JSON.parse(stdout) as { executable: string; version: string; prefixes: string[] };
          const roots: string[] = [];
          for (const dir of info.prefixes.map((p) => realpathSync(p))) {
            if (isUnder(dir, '/usr') || roots.some((r) => isUnder(dir, r))) continue;
            for (let i = roots.length - 1; i >= 0; i--) if (isUnder(roots[i]!, dir)) roots.splice(i, 1);
            roots.push(dir);
          }
          resolve({ executable: info.executable, version: info.version, roots });
        });
      }),
  );
}

/** Whether any user can reach `dir` (every ancestor searchable by others). */
function traversable(dir: string): boolean {
  for (let p = dir; ; p = path.dirname(p)) {
    try {
      if ((statSync(p).mode & 0o001) === 0) return false;
    } catch {
      return false;
    }
    if (p === '/') return true;
  }
}

function isUnder(dir: string, root: string): boolean {
  return dir === root || dir.startsWith(root.endsWith('/') ? root : `${root}/`);
}

/** /usr read-only, and the merged-/usr links (or directories) of the host's /bin, /lib, ... */
function systemBinds(): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const dir of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    try {
      const stat = lstatSync(dir);
      if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
      else if (stat.isDirectory()) args.push('--ro-bind', dir, dir);
    } catch {
      // absent on this system
    }
  }
  return args;
}

/**
 * Binds `dirs` read-only at the same paths. bubblewrap would create their missing parents mode 0700,
 * which a worker that dropped to its own uid could not traverse: create them 0755 first.
 */
function readOnlyBinds(dirs: string[]): string[] {
  const args: string[] = [];
  const made = new Set<string>();
  for (const dir of dirs) {
    const parents: string[] = [];
    for (let p = path.dirname(dir); p !== '/' && !made.has(p); p = path.dirname(p)) parents.unshift(p);
    for (const p of parents) {
      args.push('--perms', '0755', '--dir', p);
      made.add(p);
    }
    args.push('--ro-bind', dir, dir);
  }
  return args;
}

/** The fixed places of the runner and the virtualenv. */
function optDirs(): string[] {
  return ['--perms', '0755', '--dir', '/opt', '--perms', '0755', '--dir', '/opt/evalgate'];
}

/** A private /tmp of bounded size, and a minimal /dev: read-only but for its own small /dev/shm. */
function scratchAndDevices(mb: number): string[] {
  const size = String(mb * MiB);
  return [
    ...['--perms', '1777', '--size', size, '--tmpfs', '/tmp'],
    ...['--proc', '/proc', '--dev', '/dev'],
    ...['--perms', '1777', '--size', size, '--tmpfs', '/dev/shm', '--remount-ro', '/dev'],
    ...['--remount-ro', '/'],
  ];
}

function namespaceArgs(mode: 'privileged' | 'userns', network: boolean): string[] {
  const args = ['--die-with-parent', '--new-session', '--unshare-ipc', '--unshare-pid', '--unshare-uts'];
  args.push('--unshare-cgroup-try');
  if (!network) args.push('--unshare-net');
  if (mode === 'userns') args.push('--unshare-user');
  args.push('--cap-drop', 'ALL');
  return args;
}

function envArgs(env: Record<string, string>): string[] {
  const args = ['--clearenv'];
  for (const [k, v] of Object.entries(env)) args.push('--setenv', k, v);
  return args;
}

function limitsHeader(limits: SandboxLimits, nproc: boolean): RunnerHeaderBase['limits'] {
  return {
    as: limits.memoryMb * MiB,
    cpu: limits.cpuSeconds,
    nproc: nproc ? limits.processes : null,
    fsize: limits.fileSizeMb * MiB,
    nofile: OPEN_FILES,
  };
}

/**
 * The command line of one evaluator worker. `uid` is the worker's own uid in privileged and unsafe
 * modes when the service is root (null otherwise); `venvDir` the evaluator's virtualenv, if any.
 */
export function workerLaunch(
  mode: SandboxMode,
  settings: SandboxSettings,
  bwrap: string,
  python: PythonInstall,
  venvDir: string | null,
  uid: number | null,
): WorkerLaunch {
  const runnerArgs = ['-I', '-B'];
  if (mode === 'unsafe') {
    const command = venvDir ? path.join(venvDir, 'bin', 'python') : python.executable;
    // Without a sandbox the worker sees the host's permissions: drop only if it can still read Python.
    if (uid !== null && ![...python.roots, venvDir ?? '/'].every(traversable)) uid = null;
    return {
      command,
      args: [...runnerArgs, RUNNER_PATH],
      env: WORKER_ENV,
      cwd: '/tmp',
      // RLIMIT_NPROC counts every process of the uid: only meaningful when the worker has its own.
      header: { limits: limitsHeader(settings.limits, uid !== null), uid, gid: uid, sandboxed: false },
    };
  }
  const args = namespaceArgs(mode, false);
  if (mode === 'privileged') args.push('--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID');
  args.push(...systemBinds(), ...readOnlyBinds(python.roots), ...optDirs());
  if (venvDir) args.push('--ro-bind', venvDir, IN_SANDBOX.venv);
  args.push('--ro-bind', RUNNER_PATH, IN_SANDBOX.runner);
  args.push(...scratchAndDevices(settings.limits.tmpMb));
  args.push(...envArgs(WORKER_ENV), '--chdir', '/tmp');
  args.push(venvDir ? `${IN_SANDBOX.venv}/bin/python` : python.executable, ...runnerArgs, IN_SANDBOX.runner);
  const drop = mode === 'privileged' ? uid : null;
  return {
    command: bwrap,
    args,
    env: {},
    cwd: '/',
    header: { limits: limitsHeader(settings.limits, true), uid: drop, gid: drop, sandboxed: true },
  };
}

export interface PipSettings {
  indexUrl: string | null;
  findLinks: string[];
  timeoutMs: number;
}

function isLocal(link: string): boolean {
  return !/^[a-z][a-z0-9+.-]*:\/\//i.test(link) || link.startsWith('file://');
}

function toPath(link: string): string {
  return link.startsWith('file://') ? fileURLToPath(link) : path.resolve(link);
}

/**
 * pip's arguments: binary wheels only, from the configured index and/or find-links. `findLinks` are
 * as seen by pip (local directories are bound at fixed paths inside the install sandbox).
 */
function pipArgs(
  indexUrl: string | null,
  findLinks: string[],
  venvPython: string,
  requirements: string[],
): string[] {
  const args = ['-I', '-m', 'pip', '--python', venvPython, 'install', '--only-binary=:all:'];
  args.push('--no-cache-dir', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off');
  if (indexUrl) args.push('--index-url', indexUrl);
  else if (findLinks.length) args.push('--no-index');
  for (const link of findLinks) args.push('--find-links', link);
  args.push('--', ...requirements);
  return args;
}

const PROXY_VARS = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy'];

/**
 * The command line of a requirements install: network allowed, only the virtualenv being built
 * writable, the host's DNS and CA configuration readable, nothing else of the host visible.
 */
export function installLaunch(
  mode: SandboxMode,
  bwrap: string,
  python: PythonInstall,
  buildDir: string,
  pip: PipSettings,
  requirements: string[],
): Launch {
  const env: Record<string, string> = { ...BASE_ENV, PIP_CONFIG_FILE: '/dev/null' };
  for (const name of PROXY_VARS) {
    const value = process.env[name];
    if (value) env[name] = value;
  }
  if (mode === 'unsafe') {
    const links = pip.findLinks.map((l) => (isLocal(l) ? toPath(l) : l));
    const args = pipArgs(pip.indexUrl, links, path.join(buildDir, 'bin', 'python'), requirements);
    return { command: python.executable, args, env, cwd: buildDir };
  }
  const args = namespaceArgs(mode, true);
  args.push(...systemBinds(), ...readOnlyBinds(python.roots), ...optDirs());
  for (const file of [
    '/etc/resolv.conf',
    '/etc/hosts',
    '/etc/nsswitch.conf',
    '/etc/ssl',
    '/etc/ca-certificates',
    '/etc/pki',
  ]) {
    args.push('--ro-bind-try', file, file);
  }
  const links = pip.findLinks.map((link, i) => {
    if (!isLocal(link)) return link;
    const inside = `/opt/evalgate/find-links/${i}`;
    args.push('--ro-bind', toPath(link), inside);
    return inside;
  });
  args.push('--bind', buildDir, IN_SANDBOX.venv);
  args.push(...scratchAndDevices(1024));
  args.push(...envArgs(env), '--chdir', '/tmp');
  args.push(
    python.executable,
    ...pipArgs(pip.indexUrl, links, `${IN_SANDBOX.venv}/bin/python`, requirements),
  );
  return { command: bwrap, args, env: {}, cwd: '/' };
}
