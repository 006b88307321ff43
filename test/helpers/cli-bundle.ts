import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * `evalgate` as tests start it in child processes: the one-folder bundle of the current sources that
 * `npm run build` makes for the package (scripts/bundle.mjs), built on first use under .test-bundle/
 * and reused while src/ is unchanged. Starting it costs a third of the CPU of loading the sources through
 * tsx, and the tests run what users run.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BUNDLES = path.join(ROOT, '.test-bundle');

/** What the bundle is built from: every source file's path, size and modification time. */
function sourcesDigest(): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const entry of fs
      .readdirSync(dir, { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else {
        const stat = fs.statSync(file);
        hash.update(`${file}\0${stat.size}\0${stat.mtimeMs}\n`);
      }
    }
  };
  walk(path.join(ROOT, 'src'));
  for (const name of ['bundle.mjs', 'externals.mjs']) {
    const script = fs.statSync(path.join(ROOT, 'scripts', name));
    hash.update(`${name}\0${script.size}\0${script.mtimeMs}\n`);
  }
  return hash.digest('hex').slice(0, 16);
}

let entry: string | undefined;

/** The bundle's command module (built now if the sources changed since the last build). */
export function cliBundle(): string {
  if (entry) return entry;
  const dir = path.join(BUNDLES, sourcesDigest());
  const main = path.join(dir, 'evalgate.js');
  if (!fs.existsSync(main)) {
    // Built beside and renamed into place: test processes building at once never see half a bundle.
    const building = `${dir}.${process.pid}.tmp`;
    execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'bundle.mjs'), '--out', building], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    try {
      fs.renameSync(building, dir);
    } catch {
      // Another process published the same sources' bundle first.
      fs.rmSync(building, { recursive: true, force: true });
    }
    prune(path.basename(dir));
  }
  entry = main;
  return main;
}

/** Bundles of older sources, an hour after they were built. */
function prune(keep: string): void {
  for (const name of fs.readdirSync(BUNDLES)) {
    const dir = path.join(BUNDLES, name);
    if (name === keep || name.endsWith('.tmp')) continue;
    if (Date.now() - fs.statSync(dir).mtimeMs > 3_600_000) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The Node arguments that run `evalgate` (before its own arguments). */
export function cliArgs(): string[] {
  return [cliBundle()];
}
