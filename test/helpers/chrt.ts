import { execFileSync } from 'node:child_process';
import { canLeaveIdleClass } from '../../src/inference/recording/thread-priority.js';

/** Whether util-linux's `chrt` is here and this process may take a thread out of the idle class again. */
export function canChangeClasses(): boolean {
  try {
    execFileSync('chrt', ['--help'], { stdio: 'ignore' });
  } catch {
    return false;
  }
  return canLeaveIdleClass();
}
