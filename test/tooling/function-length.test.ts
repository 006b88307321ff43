import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { testDbKind } from '../helpers/databases.js';
import { tempDirs } from '../helpers/temp.js';

// No database: run once, in the SQLite project.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const temp = tempDirs();
afterAll(() => temp.removeAll());

/** A function whose body is `lines` lines long (a statement a line, plus the declaration and return). */
function functionOf(lines: number): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => `  n += ${i};`);
  return ['export function long(): number {', '  let n = 0;', ...body, '  return n;', '}', ''].join('\n');
}

/** `biome lint src` with the repository's biome.json, over a tree of the given files. */
function lint(files: Record<string, string>): Promise<{ code: number; output: string }> {
  const dir = temp.make('evalgate-function-length-');
  fs.copyFileSync(path.join(ROOT, 'biome.json'), path.join(dir, 'biome.json'));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  const biome = path.join(ROOT, 'node_modules', '.bin', 'biome');
  return new Promise((resolve, reject) => {
    const child = spawn(biome, ['lint', '--vcs-enabled=false', 'src'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      output += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      output += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

describe.skipIf(testDbKind() === 'postgres')('npm run check: function length', { timeout: 60_000 }, () => {
  it('runs biome over src/', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.check).toContain('biome check .');
  });

  it('fails on a function in src/ longer than 120 lines, and passes one of 120', async () => {
    const long = await lint({ 'src/feature/long.ts': functionOf(121) });
    expect(long.code).not.toBe(0);
    expect(long.output).toContain('lint/complexity/noExcessiveLinesPerFunction');
    expect(long.output).toContain('src/feature/long.ts');
    const fits = await lint({ 'src/feature/fits.ts': functionOf(120) });
    expect(fits.output).not.toContain('noExcessiveLinesPerFunction');
    expect(fits.code).toBe(0);
  });

  it.each(['src/gateway/long.ts', 'src/llm/dialects/messages/long.ts'])('applies to %s too', async (file) => {
    const result = await lint({ [file]: functionOf(121) });
    expect(result.output).toContain('noExcessiveLinesPerFunction');
    expect(result.code).not.toBe(0);
  });
});
