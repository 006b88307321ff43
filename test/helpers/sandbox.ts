import { execFileSync } from 'node:child_process';

/** Whether bubblewrap is installed, for tests that need a real sandbox. */
export const hasBwrap = (() => {
  try {
    execFileSync('bwrap', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
