import { execFile } from 'node:child_process';
import fs from 'node:fs';

/** The log writer's thread runs at this nice value (a background share of the CPU). */
export const BACKGROUND_NICE = 10;

/** CAP_SYS_NICE, which allows any scheduling change. */
const CAP_SYS_NICE = 23n;

/**
 * Whether this process may move a thread of its own out of Linux's idle scheduling class again (at
 * BACKGROUND_NICE): with CAP_SYS_NICE, or a nice limit that allows that nice value. Without it, a
 * thread put in the idle class could not be given its share back, so it is never put there.
 */
export function canLeaveIdleClass(): boolean {
  try {
    const caps = /^CapEff:\s*([0-9a-f]+)$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    if (caps && (BigInt(`0x${caps[1]}`) >> CAP_SYS_NICE) & 1n) return true;
    const limit = /^Max nice priority\s+(\S+)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    if (!limit) return false;
    // RLIMIT_NICE is the ceiling 20 - nice; 'unlimited' allows any.
    return limit[1] === 'unlimited' || Number(limit[1]) >= 20 - BACKGROUND_NICE;
  } catch {
    return false;
  }
}

/**
 * Puts a thread of this process in Linux's idle scheduling class (it runs only when no other thread
 * wants the core, and yields at once when one wakes) or back in the normal one, through util-linux's
 * `chrt`. Resolves whether the change was made (false without chrt, or when it is not allowed).
 */
export function setIdleClass(tid: number, idle: boolean): Promise<boolean> {
  const policy = idle ? '--idle' : '--other';
  return new Promise((resolve) => {
    execFile('chrt', [policy, '--pid', '0', String(tid)], { timeout: 5000 }, (err) => resolve(!err));
  });
}
