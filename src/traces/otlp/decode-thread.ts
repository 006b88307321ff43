import { parentPort } from 'node:worker_threads';
import { lowerThisThread } from '../../shared/thread-nice.js';
import { decoded, OtlpBodyError } from './body.js';
import { decodeExport } from './decode.js';
import type { DecodeReply, ThreadMessage, ThreadStart } from './decode-pool.js';
import { serializeParts, splitRequest } from './parts.js';

/**
 * A decode pool's thread. It receives the bodies of several export requests at once, chunk by chunk as
 * their clients send them (a map by job id), so that a slow client never keeps the thread from the
 * others; when a body's end arrives, the thread joins its chunks, gunzips them and walks and decodes the
 * request, one request at a time. A job dropped by the event loop (its client left, or its body passed
 * the limit) is forgotten with its chunks.
 */

interface Held {
  start: ThreadStart;
  chunks: Uint8Array[];
  bytes: number;
}

const held = new Map<number, Held>();

/** The body whole: one chunk as it is, more joined once. */
function joined(job: Held): Uint8Array {
  if (job.chunks.length === 1) return job.chunks[0] as Uint8Array;
  return Buffer.concat(job.chunks, job.bytes);
}

function decode(port: NonNullable<typeof parentPort>, id: number, job: Held): void {
  try {
    const body = decoded(joined(job), job.start.encoding, job.start.limit);
    job.chunks = [];
    if (job.start.encoding !== 'identity')
      port.postMessage({ id, inflated: body.length } satisfies DecodeReply);
    const request = decodeExport(job.start.signal, job.start.as, body, job.start.limits);
    // Serialized here in parts, and transferred: the event loop deserializes one part per turn.
    const parts = serializeParts(splitRequest(job.start.signal, request));
    port.postMessage(
      { id, parts } satisfies DecodeReply,
      parts.map((p) => p.buffer as ArrayBuffer),
    );
  } catch (err) {
    const e = err instanceof OtlpBodyError ? err : new OtlpBodyError(400, String(err));
    port.postMessage({ id, error: { status: e.status, message: e.message } } satisfies DecodeReply);
  }
}

lowerThisThread();
const port = parentPort;
port?.on('message', (m: ThreadMessage) => {
  switch (m.type) {
    case 'start':
      held.set(m.id, { start: m, chunks: [], bytes: 0 });
      return;
    case 'chunk': {
      const job = held.get(m.id);
      if (!job) return;
      job.chunks.push(m.chunk);
      job.bytes += m.chunk.length;
      return;
    }
    case 'drop':
      held.delete(m.id);
      return;
    case 'end': {
      const job = held.get(m.id);
      if (!job) return;
      held.delete(m.id);
      decode(port, m.id, job);
      return;
    }
    case 'state': {
      let bytes = 0;
      for (const job of held.values()) bytes += job.bytes;
      port.postMessage({ id: 0, held: { jobs: held.size, bytes } } satisfies DecodeReply);
      return;
    }
  }
});
