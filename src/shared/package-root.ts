import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's own files (data/, python/, docs/, web/dist/) are found from its root, not from the
 * module that reads them: the same code runs from src/ (tests, tsx), from dist/ (tsc's output) and from
 * the one-folder bundle that `evalgate` starts (dist/bundle/), where every module sits at another depth.
 */
let root: string | undefined;

/** The folder of the nearest package.json named `evalgate` above this module. */
export function packageRoot(): string {
  if (root !== undefined) return root;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && isEvalgate(manifest)) {
      root = dir;
      return dir;
    }
    const parent = path.dirname(dir);
    if (parent === dir)
      throw new Error(`no package.json of evalgate above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

function isEvalgate(manifest: string): boolean {
  try {
    return (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'evalgate';
  } catch {
    return false;
  }
}

/** A path inside the package: `packagePath('data', 'prices.json')`. */
export function packagePath(...parts: string[]): string {
  return path.join(packageRoot(), ...parts);
}
