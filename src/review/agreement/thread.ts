import fs from 'node:fs';
import os from 'node:os';
import { parentPort } from 'node:worker_threads';
import { computeAgreement } from './compute.js';
import type { ThreadReply, ThreadRequest } from './threads.js';

/**
 * A statistics thread (started by threads.ts): computes one job at a time and answers with the figures.
 * Nothing here touches the database or the network: it receives plain pairs and returns plain figures.
 */

/** The thread's nice value on Linux: request handling on the main thread comes first on a busy machine. */
const BACKGROUND_NICE = 10;

function lowerPriority(): void {
  try {
    // /proc/thread-self names this thread; setpriority on a thread id applies to that thread only.
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return;
    // Never raise the priority of a process that was started at a lower one (that would need a privilege).
    os.setPriority(tid, Math.max(os.getPriority(tid), BACKGROUND_NICE));
  } catch {
    // Not Linux, or not allowed: the thread runs at the process's priority.
  }
}

lowerPriority();
const port = parentPort;
if (!port) throw new Error('the agreement statistics thread must be started as a worker thread');
port.on('message', (request: ThreadRequest) => {
  let reply: ThreadReply;
  try {
    reply = { figures: computeAgreement(request.job) };
  } catch (err) {
    reply = { error: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply);
});
