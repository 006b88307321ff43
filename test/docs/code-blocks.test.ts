import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type MockReply,
  type MockRequest,
  type MockUpstream,
  startMockUpstream,
} from '../fixtures/mock-upstream.js';
import { cliBundle } from '../helpers/cli-bundle.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDir } from '../helpers/temp.js';
import { type Block, codeBlocks, documents } from './blocks.js';
import { checkNames } from './names.js';

// The README's and docs/'s code blocks, run against a live server whose providers are the mock on
// loopback, so that a doc that drifts from the code fails here. They run as a newcomer follows them: one
// fresh server, one fresh project and one directory for the whole reading order (DOCS_IN_ORDER, which the
// README lists too), each page's blocks in turn, so that a page that creates what an earlier page created
// (a 409) or uses what no page before it made (a 404) fails. Shell blocks run one after another in that
// directory (what one writes, the next reads; the variables a block sets are kept, as in one terminal);
// a page's JS/TS blocks run as one module, its Python blocks as one script. A block that cannot run says
// why before its fence (`<!-- test: skip (reason) -->`, test/docs/blocks.ts). Once, on SQLite: what the
// blocks call is checked on both databases elsewhere.
const ROOT = path.resolve(import.meta.dirname, '../..');
const PYTHON = path.join(ROOT, 'clients/python/.venv/bin/python');
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
// Inside the package, so that 'evalgate/client' resolves to it as in a clone.
const SCRATCH = path.join(ROOT, '.docs-blocks');
/** Addresses the docs write, for the server and the model server they assume. */
const DOC_SERVER = 'http://127.0.0.1:8080';
const DOC_MODEL_SERVER = 'http://127.0.0.1:11434/v1';

/**
 * The order a newcomer reads the docs in: the README first, then what it points to. The README's
 * "The docs, in order" lists the same pages in the same order (checked below), and every page of docs/
 * has its place.
 */
const DOCS_IN_ORDER = [
  'README.md',
  'docs/cli.md',
  'docs/api.md',
  'docs/client.md',
  'docs/python.md',
  'docs/gateway.md',
  'docs/catalog.md',
  'docs/runs.md',
  'docs/graders.md',
  'docs/code-evaluators.md',
  'docs/openai-evals.md',
  'docs/monitors.md',
  'docs/agents.md',
  'docs/traces.md',
  'docs/review.md',
  'docs/prompts.md',
  'docs/playground.md',
  'docs/guards.md',
  'docs/mcp.md',
  'docs/ci.md',
  'docs/dashboard.md',
  'docs/configuration.md',
  'docs/reliability.md',
  'docs/scale-out.md',
  'docs/deploy.md',
  'docs/performance.md',
  'docs/architecture.md',
];

let h: Harness;
let mock: MockUpstream;
/** The key of the one project every block works in, as the server printed it at its first start. */
let key = '';
/** The one directory (and HOME) every block runs in. */
let dir = '';

/** Whether the conversation ends with a tool's result (chat `tool` message, Anthropic `tool_result`). */
function answersTool(body: MockRequest['body']): boolean {
  const last = Array.isArray(body?.messages) ? body.messages.at(-1) : undefined;
  return (
    last?.role === 'tool' ||
    (Array.isArray(last?.content) && last.content.some((p: { type?: string }) => p?.type === 'tool_result'))
  );
}

/**
 * Judges (a forced answer shape) get a verdict; a call offering tools gets a call of its first tool
 * until a tool's result comes back; everything else an echo.
 */
function reply(req: MockRequest): string | MockReply {
  const body = req.body;
  if (body?.response_format || body?.tool_choice)
    return { json: { score: 1, reasoning: 'as the docs expect' } };
  const tools: { name?: string; function?: { name?: string } }[] = Array.isArray(body?.tools)
    ? body.tools
    : [];
  const name = tools[0]?.function?.name ?? tools[0]?.name;
  if (name && !answersTool(body)) return { toolCalls: [{ name, arguments: {} }] };
  return `echo: ${req.lastUserText}`;
}

beforeAll(async () => {
  if (testDbKind() === 'postgres') return;
  mock = await startMockUpstream({ reply });
  h = await startHarness({
    env: {
      OPENAI_API_KEY: 'sk-docs',
      OPENAI_BASE_URL: mock.baseUrl,
      ANTHROPIC_API_KEY: 'sk-ant-docs',
      ANTHROPIC_BASE_URL: mock.baseUrl,
    },
  });
  fs.mkdirSync(SCRATCH, { recursive: true });
  key = (await h.key(['*'], 'docs')).key;
  dir = tempDir('evalgate-docs-').dir;
}, 60_000);
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

/** The doc's addresses and placeholders made real. */
function substitute(code: string): string {
  return code
    .replaceAll(DOC_MODEL_SERVER, mock.baseUrl)
    .replaceAll(DOC_SERVER, h.url)
    .replaceAll('eg_2hVq…', key)
    .replaceAll('run_…', '$(last_run)');
}

function env(home: string): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_') && !k.startsWith('OPENAI_')),
  );
  return {
    ...base,
    HOME: home,
    EVALGATE_BASE_URL: h.url,
    EVALGATE_API_KEY: key,
    URL: h.url,
    KEY: key,
    OPENAI_BASE_URL: `${h.url}/v1`,
    OPENAI_API_KEY: key,
    EVALGATE_ROOT: ROOT,
    EVALGATE_TEST_CLI: cliBundle(),
  };
}

/**
 * `npx evalgate` is this checkout's CLI (its bundle, as `npm run build` makes it); `last_run` the newest
 * run's id (the docs' `run_…`). The variables a block sets or sets again (`H=…; API=…`, `RUN=…`) hold in
 * the blocks after it, as in one terminal.
 */
const PRELUDE = `
__before="$(compgen -v)"
if [ -f .docs-state ]; then source .docs-state; fi
__save() { for v in $(compgen -v); do case "$v" in __*|BASH*|FUNCNAME|PIPESTATUS|_|LINENO|RANDOM|SECONDS|EPOCH*|SRANDOM|COLUMNS|LINES|OPT*|PWD|OLDPWD|SHLVL|HIST*|PPID|UID|EUID|GROUPS|HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE|SHELLOPTS|IFS|PS*|DIRSTACK) continue;; esac; grep -qx "$v" <<<"$__before" || declare -p "$v"; done > .docs-state.next 2>/dev/null; mv .docs-state.next .docs-state; }
trap __save EXIT
npx() { if [ "$1" = evalgate ]; then shift; node "$EVALGATE_TEST_CLI" "$@"; else command npx "$@"; fi; }
evalgate() { npx evalgate "$@"; }
last_run() { curl -s "$EVALGATE_BASE_URL/v1/evaluation/runs?limit=1" -H "Authorization: Bearer $EVALGATE_API_KEY" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).data[0].id))'; }
`;

interface Ran {
  code: number;
  out: string;
}

function run(cmd: string, args: string[], cwd: string, home: string): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      { cwd, env: env(home), timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, out: `${stdout}\n${stderr}`.trim() });
      },
    );
  });
}

const where = (b: Block) => `${b.file}:${b.line}`;
const failure = (b: Block, code: string, ran: Ran) =>
  `${where(b)} exited ${ran.code}\n--- block ---\n${code}\n--- output ---\n${ran.out.slice(-4000)}`;

/**
 * JS/TS blocks as one ES module: their imports first (once each), then their code in order, with the
 * top-level `const`/`let` as `var`, so that a block may declare again a name an earlier block declared
 * (each block stands alone in the doc), as in a REPL.
 */
function oneModule(blocks: Block[]): string {
  const imports = new Set<string>();
  const body: string[] = [];
  for (const b of blocks) {
    for (const line of substitute(b.code).split('\n')) {
      if (/^import .* from '.*';$/.test(line)) imports.add(line);
      else body.push(line.replace(/^(const|let) /, 'var '));
    }
  }
  return [...imports, ...body].join('\n');
}

/**
 * A block of code that lives inside src/, type-checked with the repository's compiler options: written
 * under SCRATCH with its `./` imports pointed at src/, and given to tsc alone.
 */
function typecheck(block: Block): Promise<Ran> {
  const dir = path.join(SCRATCH, 'typecheck', `${block.file.replace(/\W/g, '_')}_${block.line}`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'block.ts'), block.code.replace(/from '\.\//g, "from '../../../src/"));
  const tsconfig = {
    extends: '../../../tsconfig.json',
    compilerOptions: { noEmit: true, rootDir: '../../..' },
    include: [],
    files: ['block.ts'],
  };
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  return run(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], ROOT, dir);
}

/** The pages listed under the README's "The docs, in order", in its order. */
function readmeOrder(): string[] {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.split(/^## The docs, in order$/m)[1]?.split(/^## /m)[0] ?? '';
  return [...section.matchAll(/^\d+\. \[[^\]]*\]\(([^)#]+)\)/gm)].map((m) => m[1]!);
}

/**
 * The modules a page's Python blocks import that neither the standard library nor the page's install
 * line gives: its `pip install` words, `./clients/python` with its dependencies and the extras named.
 */
const MISSING_INSTALLS = `
import json, re, sys, tomllib
install, code, pyproject = sys.argv[1:4]
with open(pyproject, "rb") as f:
    meta = tomllib.load(f)["project"]
dist = lambda req: re.match(r"[A-Za-z0-9_.-]+", req).group(0).lower().replace("-", "_")
provided = set()
for line in install.splitlines():
    m = re.search(r"pip install (.*)", line.split("#")[0])
    for word in (m.group(1).split() if m else []):
        word = word.strip(chr(34) + chr(39))
        if word.startswith("-"):
            continue
        name, _, extras = word.rstrip("]").partition("[")
        if name.rstrip("/").endswith("clients/python"):
            provided.add("evalgate")
            reqs = meta["dependencies"] + [r for e in extras.split(",") if e for r in meta["optional-dependencies"][e]]
            provided.update(dist(r) for r in reqs)
        else:
            provided.add(dist(name))
imports = set(re.findall(r"^\\s*(?:from|import)\\s+([A-Za-z_]\\w*)", code, re.M))
print(json.dumps(sorted(m for m in imports if m not in sys.stdlib_module_names and m.lower() not in provided)))
`;

describe.skipIf(testDbKind() === 'postgres')(
  'the code blocks of the docs run in order in one project',
  () => {
    it('follows an order that has every page once, the one the README lists', () => {
      expect([...DOCS_IN_ORDER].sort()).toEqual([...documents(ROOT)].sort());
      expect(['README.md', ...readmeOrder()]).toEqual(DOCS_IN_ORDER);
    });

    it('finds blocks to run in the README and the main docs', () => {
      const runnable = (file: string) => codeBlocks(file, ROOT).filter((b) => b.skip === null).length;
      for (const file of [
        'README.md',
        'docs/catalog.md',
        'docs/cli.md',
        'docs/client.md',
        'docs/api.md',
        'docs/python.md',
        'docs/review.md',
      ]) {
        expect(runnable(file), file).toBeGreaterThan(0);
      }
    });

    it.skipIf(!fs.existsSync(PYTHON))(
      "installs what docs/python.md's blocks import with the page's own install line",
      async () => {
        const blocks = codeBlocks('docs/python.md', ROOT);
        const install = blocks.find((b) => b.lang === 'sh' && b.code.includes('pip install'));
        expect(install, 'docs/python.md has a pip install block').toBeDefined();
        const code = blocks
          .filter((b) => b.lang === 'python' && b.skip === null)
          .map((b) => b.code)
          .join('\n');
        const pyproject = path.join(ROOT, 'clients/python/pyproject.toml');
        const ran = await run(PYTHON, ['-c', MISSING_INSTALLS, install!.code, code, pyproject], ROOT, ROOT);
        expect(ran.code, ran.out).toBe(0);
        expect(JSON.parse(ran.out), `imported, not installed by docs/python.md:${install!.line}`).toEqual([]);
      },
    );

    for (const file of DOCS_IN_ORDER) {
      const blocks = codeBlocks(file, ROOT);
      if (blocks.length === 0) continue;
      describe(file, () => {
        for (const block of blocks.filter((b) => b.namesOnly !== null)) {
          it(`sh block at line ${block.line} names tests, scripts and flags that exist (${block.namesOnly})`, () => {
            expect(checkNames(block.code, ROOT), where(block)).toEqual([]);
          });
        }
        for (const block of blocks.filter((b) => b.lang === 'sh' && b.namesOnly === null)) {
          const name = `sh block at line ${block.line}`;
          if (block.skip !== null) {
            it.skip(`${name} (${block.skip})`, () => {});
            continue;
          }
          it(name, { timeout: 180_000 }, async () => {
            const code = substitute(block.code);
            const ran = await run('bash', ['-eo', 'pipefail', '-c', `${PRELUDE}\n${code}`], dir, dir);
            expect(ran.code, failure(block, code, ran)).toBe(0);
            // curl succeeds on any status: an error envelope in the output is the doc's mistake too.
            expect(ran.out, failure(block, code, ran)).not.toMatch(/\{"(error|detail)":/);
          });
        }
        for (const block of blocks.filter((b) => b.lang !== 'sh' && b.skip !== null)) {
          it.skip(`${block.lang} block at line ${block.line} (${block.skip})`, () => {});
        }
        for (const block of blocks.filter((b) => b.typecheck !== null)) {
          it(`ts block at line ${block.line} type-checks against src/ (${block.typecheck})`, {
            timeout: 180_000,
          }, async () => {
            const ran = await typecheck(block);
            expect(ran.code, failure(block, block.code, ran)).toBe(0);
          });
        }
        const scripts = blocks.filter(
          (b) => (b.lang === 'js' || b.lang === 'ts') && b.skip === null && b.typecheck === null,
        );
        if (scripts.length > 0) {
          it(`JS/TS blocks at lines ${scripts.map((b) => b.line).join(', ')}`, {
            timeout: 180_000,
          }, async () => {
            const module = path.join(SCRATCH, `${file.replace(/\W/g, '_')}.mts`);
            const code = oneModule(scripts);
            fs.writeFileSync(module, code);
            const ran = await run(process.execPath, ['--import', TSX, module], dir, dir);
            expect(ran.code, failure(scripts[0]!, code, ran)).toBe(0);
          });
        }
        const python = blocks.filter((b) => b.lang === 'python' && b.skip === null);
        if (python.length > 0) {
          const lines = python.map((b) => b.line).join(', ');
          it.skipIf(!fs.existsSync(PYTHON))(
            `Python blocks at lines ${lines}${fs.existsSync(PYTHON) ? '' : ' (no clients/python/.venv: npm run test:python creates it)'}`,
            { timeout: 180_000 },
            async () => {
              const script = path.join(dir, `${file.replace(/\W/g, '_')}.py`);
              const code = python.map((b) => substitute(b.code)).join('\n');
              fs.writeFileSync(script, code);
              const ran = await run(PYTHON, [script], dir, dir);
              expect(ran.code, failure(python[0]!, code, ran)).toBe(0);
            },
          );
        }
      });
    }
  },
);
