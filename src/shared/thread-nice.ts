import fs from 'node:fs';
import os from 'node:os';

/** The nice value of background threads on Linux: request handling on the main thread comes first. */
export const BACKGROUND_NICE = 10;

/**
 * Lowers the calling thread's priority to BACKGROUND_NICE (never raising one started lower, which would
 * need a privilege); answers the thread's Linux id, or null where it cannot (not Linux, not allowed).
 */
export function lowerThisThread(): number | null {
  try {
    // /proc/thread-self names this thread; setpriority on a thread id applies to that thread only.
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return null;
    os.setPriority(tid, Math.max(os.getPriority(tid), BACKGROUND_NICE));
    return tid;
  } catch {
    return null;
  }
}
