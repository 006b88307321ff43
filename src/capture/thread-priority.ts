import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import type { Socket } from 'node:net';
import { createInterface } from 'node:readline';

import { BACKGROUND_NICE } from '../shared/thread-nice.js';

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
 * A shell kept for the life of the process that runs `chrt` on request, one line per change. Spawning
 * `chrt` from this process would fork the whole server (hundreds of megabytes mapped) on the event loop's
 * thread, a stall of milliseconds per change; the small shell forks cheaply, and asking it is one write
 * to a pipe. Its pipes and process hold the event loop only while an answer is awaited; it ends with
 * this process (its input closes). Once it is gone (no sh), every change answers false.
 */
class ChrtShell {
  private child: ChildProcess | null = null;
  private dead = false;
  private readonly waiting: ((done: boolean) => void)[] = [];

  run(policy: string, tid: number): Promise<boolean> {
    const child = this.child ?? this.start();
    if (!child?.stdin) return Promise.resolve(false);
    const stdin = child.stdin;
    return new Promise((resolve) => {
      // While an answer is awaited its pipe holds the event loop, as the `chrt` process itself would.
      if (this.waiting.push(resolve) === 1) (child.stdout as Socket | null)?.ref();
      stdin.write(`${policy} ${tid}\n`);
    });
  }

  private start(): ChildProcess | null {
    if (this.dead) return null;
    const child = spawn('sh', ['-c', CHRT_LOOP], { stdio: ['pipe', 'pipe', 'ignore'] });
    this.child = child;
    const gone = () => {
      if (this.child === child) this.child = null;
      this.dead = true;
      for (const resolve of this.waiting.splice(0)) resolve(false);
    };
    child.once('error', gone);
    child.once('exit', gone);
    child.stdin?.on('error', gone);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      this.waiting.shift()?.(line.trim() === '0');
      if (this.waiting.length === 0) (child.stdout as Socket | null)?.unref();
    });
    child.unref();
    // The stdio pipes are sockets: unreferenced while nothing is awaited, they keep no event loop alive.
    for (const pipe of [child.stdin, child.stdout]) (pipe as Socket | null)?.unref();
    return child;
  }
}

/** Reads `<policy> <tid>` lines and answers each with chrt's exit status. */
const CHRT_LOOP = 'while read -r policy tid; do chrt "$policy" --pid 0 "$tid" >/dev/null 2>&1; echo $?; done';

const shell = new ChrtShell();

/**
 * Puts a thread of this process in Linux's idle scheduling class (it runs only when no other thread
 * wants the core, and yields at once when one wakes) or back in the normal one, through util-linux's
 * `chrt` (run by a helper shell, see ChrtShell). Resolves whether the change was made (false without
 * chrt or sh, or when it is not allowed).
 */
export function setIdleClass(tid: number, idle: boolean): Promise<boolean> {
  return shell.run(idle ? '--idle' : '--other', tid);
}
