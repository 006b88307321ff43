import fs from 'node:fs';
import os from 'node:os';
import { parentPort } from 'node:worker_threads';
import { OtlpBodyError } from './body.js';
import { decodeExport } from './decode.js';
import type { DecodeReply, DecodeRequest } from './decode-pool.js';
import { serializeParts, splitRequest } from './parts.js';

/** A decode pool's thread: walks and decodes one export request at a time, as the pool hands them over. */

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
port?.on('message', (job: DecodeRequest) => {
  let reply: DecodeReply;
  try {
    const request = decodeExport(job.signal, job.as, job.bytes, job.limits);
    // Serialized here in parts, and transferred: the event loop deserializes one part per turn.
    const parts = serializeParts(splitRequest(job.signal, request));
    reply = { id: job.id, parts };
    port.postMessage(
      reply,
      parts.map((p) => p.buffer as ArrayBuffer),
    );
    return;
  } catch (err) {
    const e = err instanceof OtlpBodyError ? err : new OtlpBodyError(400, String(err));
    reply = { id: job.id, error: { status: e.status, message: e.message } };
  }
  port.postMessage(reply);
});
