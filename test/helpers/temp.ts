import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TempDir {
  dir: string;
  /** Removes the directory and everything in it (no error when it is gone already). */
  remove(): void;
}

/** A fresh directory under the system's temporary directory, and how to remove it. */
export function tempDir(prefix = 'evalgate-test-'): TempDir {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/**
 * For a test file that makes temporary directories as it goes: `make` gives a fresh one's path,
 * `removeAll` (in an afterAll) removes every one made so far.
 */
export function tempDirs(defaultPrefix = 'evalgate-test-'): {
  make(prefix?: string): string;
  removeAll(): void;
} {
  const made: TempDir[] = [];
  return {
    make(prefix = defaultPrefix) {
      const t = tempDir(prefix);
      made.push(t);
      return t.dir;
    },
    removeAll() {
      for (const t of made.splice(0)) t.remove();
    },
  };
}
