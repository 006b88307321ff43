import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { testDbKind } from '../helpers/databases.js';
import { RESOLVE_LOG_HOOK } from '../helpers/resolve-log.js';
import { tempDirs } from '../helpers/temp.js';

// Neither test needs a database (the child below uses SQLite in a directory of its own): they run once,
// in the SQLite project, rather than twice to the same effect.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const temp = tempDirs();
afterAll(() => temp.removeAll());

interface Run {
  code: number;
  output: string;
}

function run(command: string, args: string[], cwd: string, options: { shell?: boolean } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      shell: options.shell ?? false,
      env: {
        ...process.env,
        PATH: `${path.join(ROOT, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH}`,
      },
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

/**
 * The dependency step of `npm run check`: what its script runs after `tsc` and `biome`, read from
 * package.json so that this test checks the command the check really runs.
 */
function dependencyStep(): { command: string; files: string[] } {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const steps = pkg.scripts.check!.split(' && ').filter((s) => !/^(tsc|biome) /.test(s));
  const command = steps.join(' && ');
  // The files the step names (its configuration, its scripts), to copy next to a fixture tree.
  const files = [...command.matchAll(/(?:--config |node )(\S+)/g)].map((m) => m[1]!);
  return { command, files };
}

/** A tree of TypeScript files with what the dependency step needs to run in it, as in the repository. */
function fixture(files: Record<string, string>): string {
  const dir = temp.make('evalgate-import-rules-');
  const tree: Record<string, string> = {
    'tsconfig.json': JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        verbatimModuleSyntax: true,
      },
      include: ['src'],
    }),
    // The step cruises the web app's sources too: a tree without one has an empty app.
    'web/src/main.ts': 'export {};\n',
    ...files,
  };
  for (const [name, text] of Object.entries(tree)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  for (const name of dependencyStep().files) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, name), path.join(dir, name));
  }
  // The step's scripts import dependency-cruiser, and imports of packages resolve, as in the repository.
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

const checkDependencies = (cwd: string) => run(dependencyStep().command, [], cwd, { shell: true });
const checkFolders = (cwd: string) =>
  run(process.execPath, [path.join(ROOT, 'scripts', 'check-folders.mjs')], cwd);

describe.skipIf(testDbKind() === 'postgres')('npm run check: import rules', { timeout: 120_000 }, () => {
  it('runs dependency-cruiser and the folder-cycle check after tsc and biome', () => {
    const { command, files } = dependencyStep();
    expect(command).toMatch(/depcruise src web\/src --config \S+/);
    expect(command).toContain('node scripts/check-folders.mjs');
    for (const name of files) expect(fs.existsSync(path.join(ROOT, name)), name).toBe(true);
  });

  it('fails on two folders that import each other, naming both', async () => {
    const dir = fixture({
      'src/a/x.ts': "import { y } from '../b/y.js';\nexport const x = () => y;\n",
      'src/b/y.ts': "import { x } from '../a/x.js';\nexport const y = () => x;\n",
    });
    const step = await checkDependencies(dir);
    expect(step.code, step.output).not.toBe(0);
    expect(step.output).toContain('src/a/');
    expect(step.output).toContain('src/b/');

    // That cycle is a module cycle as well, which depcruise reports first; the folder check on its own:
    const folders = await checkFolders(dir);
    expect(folders.code, folders.output).toBe(1);
    expect(folders.output).toContain('no-folder-cycle: src/a ↔ src/b');
    expect(folders.output).toContain('src/a → src/b (1 import), e.g. src/a/x.ts → src/b/y.ts');
    expect(folders.output).toContain('src/b → src/a (1 import), e.g. src/b/y.ts → src/a/x.ts');
  });

  it('fails on a folder cycle that is no module cycle, through a sub-folder or a file in src/', async () => {
    const dir = fixture({
      'src/a/x.ts': "import { y } from '../b/y.js';\nexport const x = () => y;\n",
      'src/a/sub/z.ts': 'export const z = 1;\n',
      'src/b/y.ts': "import { z } from '../a/sub/z.js';\nexport const y = () => z;\n",
      'src/c/c.ts': "import { r } from '../root.js';\nexport const c = () => r;\n",
      'src/c/d.ts': 'export const d = 1;\n',
      'src/root.ts': "import { d } from './c/d.js';\nexport const r = d;\n",
    });
    const step = await checkDependencies(dir);
    expect(step.code, step.output).toBe(1);
    expect(step.output).toContain('no-folder-cycle: src/a ↔ src/b');
    expect(step.output).toContain('no-folder-cycle: src/c ↔ src/root.ts');
    expect(step.output).toContain('x 2 folder cycles');
  });

  it('fails on a back-arrow inside a folder: a file and a sibling sub-folder that import each other', async () => {
    const dir = fixture({
      'src/llm/runner.ts': "import { rule } from './dialects/rule.js';\nexport const run = () => rule;\n",
      'src/llm/types.ts': 'export const kind = 1;\n',
      'src/llm/dialects/rule.ts': 'export const rule = 1;\n',
      'src/llm/dialects/uses.ts': "import { run } from '../runner.js';\nexport const uses = () => run;\n",
    });
    const folders = await checkFolders(dir);
    expect(folders.code, folders.output).toBe(1);
    expect(folders.output).toContain('no-folder-cycle: src/llm/dialects ↔ src/llm/runner.ts');
    expect(folders.output).toContain(
      'src/llm/dialects → src/llm/runner.ts (1 import), e.g. src/llm/dialects/uses.ts → src/llm/runner.ts',
    );
  });

  it('keeps src/llm apart from the gateway, capture and the engine, and the gateway apart from features', async () => {
    for (const [from, to] of [
      ['src/llm/call.ts', 'src/gateway/edge.ts'],
      ['src/llm/call.ts', 'src/capture/writer.ts'],
      ['src/llm/call.ts', 'src/engine/plan.ts'],
      ['src/capture/writer.ts', 'src/gateway/edge.ts'],
      ['src/runs/service.ts', 'src/gateway/edge.ts'],
    ] as const) {
      const spec = path.relative(path.dirname(from), to).replace(/\.ts$/, '.js');
      const dir = fixture({
        [from]: `import type { T } from '${spec.startsWith('.') ? spec : `./${spec}`}';\nexport type U = T;\n`,
        [to]: 'export type T = number;\n',
      });
      const step = await checkDependencies(dir);
      expect(step.code, `${from} → ${to}: ${step.output}`).not.toBe(0);
      expect(step.output).toMatch(/error (llm-stands-alone|capture-below-gateway|gateway-is-an-edge):/);
    }
    const allowed = fixture({
      'src/gateway/edge.ts': "import type { T } from '../llm/call.js';\nexport type U = T;\n",
      'src/capture/writer.ts': "import type { T } from '../llm/call.js';\nexport type V = T;\n",
      'src/llm/call.ts': 'export type T = number;\n',
      'src/app.ts': "import type { U } from './gateway/edge.js';\nexport type W = U;\n",
    });
    const ok = await checkDependencies(allowed);
    expect(ok.code, ok.output).toBe(0);
  });

  it('passes a tree whose folders import one way only; an `import type` back counts as an import', async () => {
    const oneWay = fixture({
      'src/a/x.ts': "import { y } from '../b/y.js';\nexport const x = () => y;\n",
      'src/b/y.ts': 'export const y = (v: number) => v;\n',
      'src/a/types.ts': 'export type X = number;\n',
    });
    const step = await checkDependencies(oneWay);
    expect(step.code, step.output).toBe(0);
    expect(step.output).toContain('no import cycles between the 2 top-level units of src/');

    // A folder naming another's types depends on it: `import type` and `import { type X }` alike.
    for (const statement of [
      "import type { X } from '../a/types.js';",
      "import { type X } from '../a/types.js';",
    ]) {
      const back = fixture({
        'src/a/x.ts': "import { y } from '../b/y.js';\nexport const x = () => y;\n",
        'src/b/y.ts': `${statement}\nexport const y = (v: X) => v;\n`,
        'src/a/types.ts': 'export type X = number;\n',
      });
      const kept = await checkDependencies(back);
      expect(kept.code, kept.output).toBe(1);
      expect(kept.output).toContain('src/b → src/a (1 import), e.g. src/b/y.ts → src/a/types.ts');
    }
  });

  it('lets only src/executor/ import bullmq statically; others may import() it', async () => {
    const allowed = fixture({
      'src/executor/queue.ts':
        "import { Queue } from 'bullmq';\nexport const make = (n: string) => new Queue(n);\n",
      'src/app.ts': "export const load = () => import('./executor/queue.js');\n",
      'src/other.ts': "export const load = () => import('bullmq');\n",
    });
    const ok = await checkDependencies(allowed);
    expect(ok.code, ok.output).toBe(0);

    const forbidden = fixture({
      'src/runs/queue.ts':
        "import { Queue } from 'bullmq';\nexport const make = (n: string) => new Queue(n);\n",
    });
    const bad = await checkDependencies(forbidden);
    expect(bad.code, bad.output).not.toBe(0);
    expect(bad.output).toMatch(/bullmq-only-in-executor: src\/runs\/queue\.ts → \S*node_modules\/bullmq\//);
  });

  it('passes the real src/', async () => {
    // Not skipped, whatever it fails on: a folder cycle (src/engine ↔ src/runs until src/engine is
    // rewritten) fails it as it fails `npm run check`.
    const step = await checkDependencies(ROOT);
    expect(step.code, step.output).toBe(0);
  });
});

/**
 * A child process that records every URL the module loader resolves, starts the embedded mode (SQLite,
 * no Redis), answers one request and prints which of those URLs are bullmq's.
 */
const EMBEDDED = `
import fs from 'node:fs';
import { createRequire, register } from 'node:module';
import path from 'node:path';

const [tmp, alsoBullmq] = process.argv.slice(1);
const log = path.join(tmp, 'resolved.txt');
fs.writeFileSync(log, '');
const hook = ${JSON.stringify(RESOLVE_LOG_HOOK)};
register('data:text/javascript,' + encodeURIComponent(hook), { data: { log } });

const { loadConfig } = await import('./src/config.ts');
const { createServices } = await import('./src/services.ts');
const { createApp } = await import('./src/app.ts');
const services = await createServices(
  loadConfig({
    EVALGATE_DATA_DIR: tmp,
    EVALGATE_DATABASE_URL: 'sqlite:' + tmp + '/db',
    EVALGATE_LOG_LEVEL: 'silent',
    EVALGATE_KEY_PEPPER: 'x'.repeat(32),
  }),
);
const app = await createApp(services);
await app.server.listen({ host: '127.0.0.1', port: 0 });
const { port } = app.server.server.address();
const health = await fetch('http://127.0.0.1:' + port + '/healthz');
await health.arrayBuffer();
await app.close();
await services.close();
if (alsoBullmq === 'yes') await import('bullmq');

// The hook sees what import resolves; what CommonJS require()s then (under tsx, bullmq's own files) does
// not go through it on Node 20, so the require cache counts too.
const required = Object.keys(createRequire(import.meta.url).cache).map((file) => 'file://' + file);
const resolved = [...fs.readFileSync(log, 'utf8').split('\\n'), ...required];
const bullmq = [...new Set(resolved.filter((url) => url.includes('/node_modules/bullmq/')))];
console.log(JSON.stringify({ health: health.status, resolved: resolved.length, bullmq }));
`;

async function embedded(
  alsoBullmq: boolean,
): Promise<{ health: number; resolved: number; bullmq: string[] }> {
  const tmp = temp.make('evalgate-embedded-');
  const child = await run(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '--eval', EMBEDDED, tmp, alsoBullmq ? 'yes' : 'no'],
    ROOT,
  );
  expect(child.code, child.output).toBe(0);
  const last = child.output.trimEnd().split('\n').at(-1)!;
  return JSON.parse(last);
}

describe.skipIf(testDbKind() === 'postgres')('the embedded mode', { timeout: 120_000 }, () => {
  it('never loads bullmq', async () => {
    const result = await embedded(false);
    expect(result.health).toBe(200);
    expect(result.resolved).toBeGreaterThan(100);
    expect(result.bullmq).toEqual([]);
  });

  it('would be caught loading it (the same child, importing bullmq at the end)', async () => {
    const result = await embedded(true);
    expect(result.health).toBe(200);
    expect(result.bullmq).not.toEqual([]);
  });
});
