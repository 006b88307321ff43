/**
 * Copies into OUT/node_modules only what the bundle (dist/bundle) loads from node_modules at run time:
 * the packages scripts/externals.mjs lists as external, with their dependencies (Node.js's resolution:
 * each one found in the nearest node_modules above the package that asks for it), and the files the data
 * packages' users read. The container image ships this instead of the whole production tree, whose
 * other packages are inside the bundle already.
 *
 *   node scripts/runtime-modules.mjs OUT
 *
 * An optional dependency that is not installed (pg-native, a platform's prebuilt addon) is skipped; a
 * required one that is missing stops the script.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DATA_PACKAGES, EXTERNAL } from './externals.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = process.argv[2];
if (!out) {
  console.error('usage: node scripts/runtime-modules.mjs OUT');
  process.exit(2);
}

/** The directory of package `name` as required from directory `from`, or null. */
function resolve(name, from) {
  for (let dir = from; dir.startsWith(ROOT); dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === ROOT) break;
  }
  return null;
}

const copied = new Set();
/** Copies package `name` (required from `from`) and, recursively, what it depends on. */
function include(name, from, optional) {
  const dir = resolve(name, from);
  if (!dir) {
    if (optional) return;
    throw new Error(`${name}, needed by ${path.relative(ROOT, from) || 'the bundle'}, is not installed`);
  }
  if (copied.has(dir)) return;
  copied.add(dir);
  fs.cpSync(dir, path.join(out, path.relative(ROOT, dir)), {
    recursive: true,
    // Its own nested node_modules are copied as they are needed, below.
    filter: (src) => !path.relative(dir, src).split(path.sep).includes('node_modules'),
  });
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  for (const dep of Object.keys(pkg.dependencies ?? {})) include(dep, dir, false);
  for (const dep of Object.keys(pkg.optionalDependencies ?? {})) include(dep, dir, true);
  for (const [dep, meta] of Object.entries(pkg.peerDependenciesMeta ?? {})) {
    if (meta?.optional) include(dep, dir, true);
  }
  for (const dep of Object.keys(pkg.peerDependencies ?? {})) {
    if (!pkg.peerDependenciesMeta?.[dep]?.optional) include(dep, dir, false);
  }
}

fs.mkdirSync(out, { recursive: true });
// pg-native is optional: pg asks for it only when told to use libpq.
for (const name of EXTERNAL) include(name, ROOT, name === 'pg-native');
for (const [name, files] of Object.entries(DATA_PACKAGES)) {
  const dir = resolve(name, ROOT);
  if (!dir) throw new Error(`${name} is not installed`);
  for (const file of files) {
    const target = path.join(out, path.relative(ROOT, dir), file);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.copyFileSync(path.join(dir, file), target);
  }
}
console.log(
  `runtime modules: ${copied.size} packages and ${Object.keys(DATA_PACKAGES).length} data package(s)`,
);
