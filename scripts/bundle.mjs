/**
 * Bundles the server and CLI (src/cli/main.ts, with the worker threads' entry modules) into one folder of
 * ES modules, dist/bundle/ by default: a start loads a few dozen files instead of about 2,700 (see
 * docs/performance.md). `evalgate` (package.json's bin) and `npm start` run dist/bundle/evalgate.js.
 *
 *   node scripts/bundle.mjs [--out DIR]
 *
 * Kept outside the bundle, loaded from node_modules as they are: the packages scripts/externals.mjs
 * lists (native addons, and packages that read files beside their own modules at run time).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { EXTERNAL } from './externals.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outIndex = process.argv.indexOf('--out');
const out = path.resolve(ROOT, outIndex > 0 ? process.argv[outIndex + 1] : 'dist/bundle');

/** Worker threads start on a module beside their caller by name (src/shared/worker-entry.ts). */
const ENTRIES = [
  'src/cli/main.ts',
  'src/capture/writer-thread.ts',
  'src/capture/span-store-thread.ts',
  'src/scoring/graders/metric-thread.ts',
  'src/review/agreement/thread.ts',
  'src/traces/otlp/decode-thread.ts',
];

// Code bundled from CommonJS packages may ask for require, __filename or __dirname.
const BANNER = [
  "import { createRequire as __evalgateRequire } from 'node:module';",
  "import { fileURLToPath as __evalgatePath } from 'node:url';",
  "import { dirname as __evalgateDirname } from 'node:path';",
  'const require = __evalgateRequire(import.meta.url);',
  'const __filename = __evalgatePath(import.meta.url);',
  'const __dirname = __evalgateDirname(__filename);',
].join(' ');

fs.rmSync(out, { recursive: true, force: true });
await build({
  absWorkingDir: ROOT,
  entryPoints: ENTRIES,
  outdir: out,
  // One flat folder: a chunk that starts a worker finds its entry module beside it.
  entryNames: '[name]',
  chunkNames: '[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  external: EXTERNAL,
  banner: { js: BANNER },
  sourcemap: 'linked',
  logLevel: 'warning',
});
// The command: Node's compile cache on (a later start reuses V8's compiled code), then the CLI.
fs.writeFileSync(
  path.join(out, 'evalgate.js'),
  "#!/usr/bin/env node\nimport module from 'node:module';\n\nmodule.enableCompileCache?.();\nawait import('./main.js');\n",
  { mode: 0o755 },
);
