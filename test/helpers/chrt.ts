import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { canLeaveIdleClass } from '../../src/capture/thread-priority.js';

/** Whether util-linux's `chrt` is here and this process may take a thread out of the idle class again. */
export function canChangeClasses(): boolean {
  try {
    execFileSync('chrt', ['--help'], { stdio: 'ignore' });
  } catch {
    return false;
  }
  return canLeaveIdleClass();
}

/** A thread of this process's scheduling policy as Linux reports it (0: normal, 5: the idle class). */
export function policyOf(tid: number): number {
  const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  // Fields after the command name's closing parenthesis start at field 3; the policy is field 41.
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
}
