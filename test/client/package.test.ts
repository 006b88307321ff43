// Database-independent: the client package's exports, read from its files.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TERMINAL_STATUSES } from '../../src/client/index.js';
import { RUN_STATUSES, TERMINAL } from '../../src/runs/schemas.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLIENT = path.join(ROOT, 'src', 'client');

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? files(full) : e.name.endsWith('.ts') ? [full] : [];
  });
}

/** The specifiers a file loads at run time: every import/export … from, except `import type`/`export type`. */
function runtimeImports(text: string): string[] {
  const statements = text.match(/^(import|export)\b[^;]*?\bfrom\s*'[^']+'/gms) ?? [];
  const dynamic = [...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].map((m) => m[1]!);
  return [
    ...statements.filter((s) => !/^(import|export)\s+type\b/.test(s)).map((s) => /'([^']+)'$/.exec(s)![1]!),
    ...dynamic,
  ];
}

/**
 * Dependency-free modules the client shares with the server, so that both run the one implementation: the
 * template engine and its stored-prompt vocabulary (the client compiles fetched prompts with them). They
 * are held to the client's own rule below, so nothing of the server comes in through them.
 */
const SHARED = ['src/scoring/template.ts', 'src/prompts/template.ts'].map((f) => path.join(ROOT, f));

describe('the evalgate/client package entry', () => {
  it('loads no server code: its run-time imports stay in src/client, the shared pure modules or node built-ins', () => {
    const outside: string[] = [];
    for (const file of [...files(CLIENT), ...SHARED]) {
      for (const spec of runtimeImports(fs.readFileSync(file, 'utf8'))) {
        const target = spec.startsWith('.')
          ? path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts')
          : '';
        const inside = target.startsWith(CLIENT + path.sep) || SHARED.includes(target);
        if (!inside && !spec.startsWith('node:')) outside.push(`${path.relative(ROOT, file)} → ${spec}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it("knows the server's terminal run statuses", () => {
    expect([...TERMINAL_STATUSES].sort()).toEqual([...TERMINAL].sort());
    for (const s of TERMINAL_STATUSES) expect(RUN_STATUSES).toContain(s);
  });

  it('is exported as evalgate/client, with the declarations the build emits', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.exports['./client']).toEqual({
      types: './dist/client/index.d.ts',
      default: './dist/client/index.js',
    });
    expect(fs.existsSync(path.join(CLIENT, 'index.ts'))).toBe(true);
    const build = JSON.parse(fs.readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8'));
    expect(build.compilerOptions).toMatchObject({ rootDir: 'src', outDir: 'dist', declaration: true });
  });
});
