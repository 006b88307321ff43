import { execFile } from 'node:child_process';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A virtual environment with scikit-learn, SciPy and NumPy (from the configured pip index), made once. Two
 * test processes may ask at once (the SQLite and the PostgreSQL run of a file): each builds in a folder of
 * its own and renames it into place; the one that comes second uses the first one's and drops its own.
 */
export async function statsPython(): Promise<string> {
  const venv = process.env.EVALGATE_STATS_VENV ?? path.join(tmpdir(), 'evalgate-stats-venv');
  const python = path.join(venv, 'bin', 'python');
  if (existsSync(path.join(venv, '.ready'))) return python;
  const building = `${venv}.${process.pid}.${Date.now()}`;
  const own = path.join(building, 'bin', 'python');
  await run('python3', ['-m', 'venv', building]);
  const pip = ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--retries', '0'];
  await run(own, [...pip, 'scikit-learn', 'scipy', 'numpy'], { timeout: 600_000 });
  await run('touch', [path.join(building, '.ready')]);
  try {
    // A venv runs from where it lies (its python is a link to the system's; `python -m` needs no script).
    renameSync(building, venv);
  } catch {
    // Another process finished first (or a stale, unfinished folder is in the way): use what is there if
    // it is complete, else ours where it was built.
    if (existsSync(path.join(venv, '.ready'))) {
      rmSync(building, { recursive: true, force: true });
      return python;
    }
    return own;
  }
  return python;
}

export interface Reference {
  percent_agreement: number;
  kappa: number;
  weighted_kappa: number;
  pearson: number;
  spearman: number;
  mae: number;
  labels: number[];
  confusion: number[][];
  kappa_interval: [number, number];
}

/** The reference figures of judge–human pairs, computed by scikit-learn and SciPy. */
export async function referenceFigures(
  python: string,
  judge: number[],
  human: number[],
  seed = 0,
  resamples = 1000,
  items?: string[],
): Promise<Reference> {
  const script = path.join(import.meta.dirname, 'reference.py');
  const child = execFile(python, [script], { maxBuffer: 16 * 1024 * 1024 });
  const out = new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout?.on('data', (d) => {
      text += d;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(text) : reject(new Error(`reference.py exited ${code}`)),
    );
  });
  child.stdin?.end(JSON.stringify({ judge, human, seed, resamples, items }));
  return JSON.parse(await out) as Reference;
}
