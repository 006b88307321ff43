/**
 * What `npm ci`, `npm install` and `npm pack` run in a clone (package.json's `prepare`), doing the work once:
 *
 * 1. The build (`npm run build`), unless its outputs are there and were built from the same inputs: the
 *    sources, the web app, the build's scripts and settings, and the lockfile (their digest is kept in
 *    dist/.build-inputs). So `npm pack` right after `npm ci` packs what `npm ci` built.
 * 2. better-sqlite3's native addon, as `npm ci` built it here (prebuilt binaries cannot always be
 *    downloaded), stored in npm's cache of prebuilt binaries (`<npm cache>/_prebuilds`) under the name
 *    its installer looks for (prebuild-install's own functions name it): a later install on this machine
 *    of the same better-sqlite3 for the same Node.js ABI, such as `npm install -g` of the packed tarball,
 *    unpacks it there instead of compiling SQLite again.
 *
 *   node scripts/prepare.mjs [--force]
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = path.join(ROOT, 'dist/.build-inputs');
/** What the build reads. */
const INPUTS = [
  'src',
  'web/src',
  'web/index.html',
  'web/vite.config.ts',
  'web/tsconfig.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'scripts/bundle.mjs',
  'scripts/externals.mjs',
  'package.json',
  'package-lock.json',
];
/** What the build makes. */
const OUTPUTS = [
  'dist/cli/main.js',
  'dist/client/index.js',
  'dist/bundle/evalgate.js',
  'web/dist/index.html',
];

function files(rel) {
  const abs = path.join(ROOT, rel);
  if (!fs.existsSync(abs)) return [];
  if (!fs.statSync(abs).isDirectory()) return [rel];
  return fs
    .readdirSync(abs, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)))
    .sort();
}

function inputsDigest() {
  const hash = createHash('sha256');
  for (const rel of INPUTS.flatMap(files)) {
    hash.update(`${rel}\0`);
    hash.update(fs.readFileSync(path.join(ROOT, rel)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

function build(force) {
  const digest = inputsDigest();
  const built = OUTPUTS.every((rel) => fs.existsSync(path.join(ROOT, rel)));
  const same = fs.existsSync(STAMP) && fs.readFileSync(STAMP, 'utf8').trim() === digest;
  if (!force && built && same) {
    console.log('evalgate: the build in dist/ is current (built from these sources); not built again');
    return;
  }
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  fs.writeFileSync(STAMP, `${digest}\n`);
}

/** better-sqlite3's addon built here, kept where its installer finds a prebuilt binary; never fails the prepare. */
function keepAddon() {
  const pkgDir = path.join(ROOT, 'node_modules/better-sqlite3');
  const addon = path.join(pkgDir, 'build/Release/better_sqlite3.node');
  if (!fs.existsSync(addon)) return;
  try {
    const require = createRequire(path.join(pkgDir, 'package.json'));
    const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
    const rc = require('prebuild-install/rc')(pkg);
    const util = require('prebuild-install/util');
    const target = util.cachedPrebuild(util.getDownloadUrl({ ...rc, pkg }));
    if (fs.existsSync(target)) return;
    fs.mkdirSync(path.dirname(target), { recursive: true });
    // The layout of a prebuilt archive: build/Release/<addon>, unpacked into the package's folder.
    const temp = `${target}.${process.pid}.tmp`;
    execFileSync('tar', ['-czf', temp, '-C', pkgDir, 'build/Release/better_sqlite3.node']);
    fs.renameSync(temp, target);
    console.log(`evalgate: better-sqlite3's addon kept for later installs on this machine (${target})`);
  } catch (err) {
    console.warn(`evalgate: better-sqlite3's addon not kept for later installs: ${err.message}`);
  }
}

build(process.argv.includes('--force'));
keepAddon();
