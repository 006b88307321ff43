import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PromiseCache } from '../../shared/promise-cache.js';
import { ScorerSetupError } from '../types.js';
import {
  installLaunch,
  type Launch,
  type PipSettings,
  type PythonInstall,
  type SandboxMode,
} from './sandbox.js';

/** What an evaluator's environment is built from. */
export interface VenvRequest {
  dataDir: string;
  python: PythonInstall;
  requirements: readonly string[];
  mode: SandboxMode;
  bwrap: string;
  pip: PipSettings;
}

/**
 * Virtualenvs for evaluator requirements, one per hash of (Python, sorted requirements) under
 * `<dataDir>/venvs/<hash>`. Concurrent requests for the same environment share one build: an
 * in-process promise per directory, and a lock directory plus an atomic rename across processes.
 */
export interface VenvCache {
  /** The directory of the ready virtualenv; throws ScorerSetupError('requirements_install_failed'). */
  ensure(request: VenvRequest): Promise<string>;
  /** Installs this cache has run (not counting environments found already built). */
  readonly installs: number;
}

const READY = '.evalgate-ready';
const POLL_MS = 250;

export function normalizeRequirements(requirements: readonly string[]): string[] {
  return [...new Set(requirements.map((r) => r.trim()).filter((r) => r !== ''))].sort();
}

export function venvHash(python: PythonInstall, requirements: readonly string[]): string {
  const key = JSON.stringify([python.version, python.executable, normalizeRequirements(requirements)]);
  return createHash('sha256').update(key).digest('hex').slice(0, 32);
}

export function createVenvCache(): VenvCache {
  const building = new PromiseCache<string, string>();
  let installs = 0;
  return {
    get installs() {
      return installs;
    },
    ensure(request) {
      const dir = path.join(request.dataDir, 'venvs', venvHash(request.python, request.requirements));
      return building.get(dir, () =>
        build(request, dir, () => {
          installs++;
        }),
      );
    },
  };
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

async function build(request: VenvRequest, dir: string, counted: () => void): Promise<string> {
  const requirements = normalizeRequirements(request.requirements);
  const bad = requirements.find((r) => r.startsWith('-'));
  if (bad) throw new ScorerSetupError('requirements_install_failed', `invalid requirement '${bad}'`);
  await mkdir(path.dirname(dir), { recursive: true });
  if (await exists(path.join(dir, READY))) return dir;
  const lock = `${dir}.lock`;
  await takeLock(lock, request.pip.timeoutMs + 60_000);
  const tmp = path.join(path.dirname(dir), `.build-${path.basename(dir)}-${randomBytes(4).toString('hex')}`);
  try {
    if (await exists(path.join(dir, READY))) return dir; // another process built it meanwhile
    await run(
      {
        command: request.python.executable,
        args: ['-I', '-m', 'venv', '--without-pip', tmp],
        env: {},
        cwd: '/',
      },
      60_000,
      'creating the virtualenv',
    );
    const launch = installLaunch(request.mode, request.bwrap, request.python, tmp, request.pip, requirements);
    counted();
    await run(launch, request.pip.timeoutMs, 'pip install', packageSources(request.pip));
    await makeReadable(tmp);
    await writeFile(
      path.join(tmp, READY),
      `${JSON.stringify({ requirements, python: request.python.version })}\n`,
    );
    await rm(dir, { recursive: true, force: true }); // a half-built leftover, never a ready one
    await rename(tmp, dir);
    return dir;
  } finally {
    await rm(tmp, { recursive: true, force: true });
    await rmdir(lock).catch(() => {});
  }
}

async function takeLock(lock: string, staleMs: number): Promise<void> {
  for (;;) {
    try {
      await mkdir(lock);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    try {
      if (Date.now() - (await stat(lock)).mtimeMs > staleMs) await rmdir(lock);
    } catch {
      // released meanwhile
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** A URL as it may be shown: without the credentials an index URL can carry. */
function shown(link: string): string {
  try {
    const url = new URL(link);
    if (url.username === '' && url.password === '') return link;
    url.username = '';
    url.password = '';
    return url.toString();
  } catch {
    return link; // a directory
  }
}

/**
 * Where pip looked, for the message of a failed install: "Could not find a version" alone does not tell
 * an operator whether the index was unreachable, the wrong one, or never asked.
 */
export function packageSources(pip: PipSettings): string {
  const links = pip.findLinks.map(shown).join(', ');
  const where = pip.indexUrl
    ? `the index ${shown(pip.indexUrl)}${links ? ` and the find-links ${links}` : ''}`
    : links
      ? `only the find-links ${links} (no index)`
      : 'the default index https://pypi.org/simple (EVALGATE_PIP_INDEX_URL is not set)';
  return `Packages were looked for in ${where}; EVALGATE_PIP_INDEX_URL and EVALGATE_PIP_FIND_LINKS set where.`;
}

function run(launch: Launch, timeoutMs: number, what: string, sources?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      launch.command,
      launch.args,
      { env: launch.env, cwd: launch.cwd, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        if (!err) return resolve();
        const output = `${stderr}`.trim() || `${stdout}`.trim() || err.message;
        const timedOut = err.killed || err.signal === 'SIGKILL';
        let message = timedOut
          ? `${what} took longer than ${timeoutMs} ms`
          : `${what} failed: ${tail(output)}`;
        if (sources) message = `${message}\n${sources}`;
        reject(new ScorerSetupError('requirements_install_failed', message));
      },
    );
  });
}

/** pip's last words, without its noise about upgrading itself. */
function tail(output: string): string {
  const lines = output.split('\n').filter((l) => !/^\[notice\]/.test(l));
  const errors = lines.filter((l) => l.startsWith('ERROR:'));
  const text = (errors.length ? errors : lines).join('\n');
  return text.length > 2000 ? `…${text.slice(-2000)}` : text;
}

/** Workers may run under another uid than the one that built the environment. */
async function makeReadable(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  await chmod(dir, 0o755);
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) await makeReadable(full);
    else if (entry.isFile()) {
      const mode = (await stat(full)).mode;
      await chmod(full, (mode & 0o777) | 0o444 | (mode & 0o100 ? 0o111 : 0));
    }
  }
}
