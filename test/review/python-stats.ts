import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A virtual environment with scikit-learn, SciPy and NumPy (from the configured pip index), made once. */
export async function statsPython(): Promise<string> {
  const venv = process.env.EVALGATE_STATS_VENV ?? path.join(tmpdir(), 'evalgate-stats-venv');
  const python = path.join(venv, 'bin', 'python');
  const ready = path.join(venv, '.ready');
  if (!existsSync(ready)) {
    await run('python3', ['-m', 'venv', venv]);
    await run(
      python,
      [
        '-m',
        'pip',
        'install',
        '--quiet',
        '--disable-pip-version-check',
        '--retries',
        '0',
        'scikit-learn',
        'scipy',
        'numpy',
      ],
      {
        timeout: 600_000,
      },
    );
    await run('touch', [ready]);
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
