import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILT_IN_SOURCES } from '../../src/sources/registry.js';

/**
 * Outside `src/sources/`, no code names a concrete source kind in a condition: a comparison with a kind's
 * name (`=== 'dataset'`, `'container' !==`), a `case 'generate':`, or `.includes('monitor')`. Whatever
 * depends on a side's kind asks the source registry.
 */

const ROOT = path.resolve(__dirname, '../..');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return files(full);
    return /\.(ts|tsx)$/.test(name) ? [full] : [];
  });
}

function conditionPatterns(kinds: string[]): RegExp[] {
  const names = kinds.map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  const lit = `(['"\`])(?:${names})\\1`;
  return [
    new RegExp(`(?:===|!==|==|!=)\\s*${lit}`),
    new RegExp(`${lit}\\s*(?:===|!==|==|!=)`),
    new RegExp(`\\bcase\\s+${lit}\\s*:`),
    new RegExp(`\\.includes\\(\\s*${lit}\\s*\\)`),
  ];
}

/** Every line of the files under `dirs` (relative to the repository) that names a kind in a condition. */
function hits(dirs: string[], kinds: string[]): string[] {
  const patterns = conditionPatterns(kinds);
  const out: string[] = [];
  for (const dir of dirs) {
    for (const file of files(path.join(ROOT, dir))) {
      const rel = path.relative(ROOT, file);
      if (rel.startsWith(`src${path.sep}sources${path.sep}`)) continue;
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (patterns.some((p) => p.test(line))) out.push(`${rel}:${i + 1}: ${line.trim()}`);
        });
    }
  }
  return out;
}

// Reads files only: run once.
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('source kinds in conditions', () => {
  const kinds = BUILT_IN_SOURCES.map((k) => k.type);

  it('knows the kinds it looks for', () => {
    expect(kinds).toEqual(
      expect.arrayContaining(['dataset', 'container', 'generate', 'monitor', 'stored_completions']),
    );
  });

  it('finds a condition on a kind where there is one (the check can fail)', () => {
    const patterns = conditionPatterns(kinds);
    for (const line of [
      "if (side.type === 'dataset') return;",
      "const x = 'container' !== side.type;",
      "  case 'generate':",
      "if (types.includes('monitor')) {}",
      'side.type == "stored_completions"',
    ]) {
      expect(
        patterns.some((p) => p.test(line)),
        line,
      ).toBe(true);
    }
    for (const line of ["const side = { type: 'dataset' };", "label: 'dataset'", "a === 'datasets'"]) {
      expect(
        patterns.some((p) => p.test(line)),
        line,
      ).toBe(false);
    }
  });

  it('finds none outside src/sources/ in src/ and web/src/', () => {
    expect(hits(['src', 'web/src'], kinds)).toEqual([]);
  });
});
