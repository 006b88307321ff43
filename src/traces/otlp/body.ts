import type { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';

/** Why an export request's body could not be read: answered as OTLP's error body, with this status. */
export class OtlpBodyError extends Error {
  constructor(
    readonly status: 400 | 413 | 415 | 429,
    message: string,
    /** With 429: the seconds the client should wait before it sends the request again. */
    readonly retryAfterS?: number,
  ) {
    super(message);
    this.name = 'OtlpBodyError';
  }
}

/** The raw body stream of an OTLP request, kept from the generic body walkers (it has no own properties). */
export class OtlpBody {
  readonly #stream: Readable;
  constructor(stream: Readable) {
    this.#stream = stream;
  }
  get stream(): Readable {
    return this.#stream;
  }
}

/** Where a large body's chunks go as they arrive, instead of being held: a decode thread's job. */
export interface ChunkSink {
  /** Takes a chunk; the caller does not read it after (its memory may be transferred). */
  push(chunk: Uint8Array): void;
  /** The body is given up (past the limit, interrupted): what the sink holds is dropped. */
  drop(): void;
}

/** A body read whole (small), or handed chunk by chunk to the sink opened for it (large). */
export type Received<T extends ChunkSink> = { body: Buffer; sink: null } | { body: null; sink: T };

export interface ReceiveOptions<T extends ChunkSink> {
  /** The most bytes the body may have: past it, 413 at once. */
  limit: number;
  /** Bodies of more bytes go to a sink, chunk by chunk, from the first chunk past this size on. */
  inlineBytes: number;
  /** The request's Content-Length, when it has one: a larger one than inlineBytes opens the sink at once. */
  contentLength?: number;
  /** Opens the sink a large body's chunks go to. */
  open: () => T;
  /** The bytes received so far, after each chunk. */
  onBytes?: (received: number) => void;
}

/**
 * Reads a request body within `limit` bytes: a small one into one buffer; a large one (Content-Length,
 * or the chunks so far, past `inlineBytes`) handed to a sink chunk by chunk as it arrives, so that this
 * thread never holds it. Past the limit it stops at once (the sink dropped) and throws 413; the rest of
 * the body is left to Node to discard, the connection closing after the answer.
 */
export function receiveBody<T extends ChunkSink>(
  stream: Readable,
  o: ReceiveOptions<T>,
): Promise<Received<T>> {
  return new Promise((resolve, reject) => {
    if (o.contentLength !== undefined && o.contentLength > o.limit) {
      stream.resume();
      reject(new OtlpBodyError(413, `The export request exceeds ${o.limit} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let sink: T | null = o.contentLength !== undefined && o.contentLength > o.inlineBytes ? o.open() : null;
    let size = 0;
    let over = false;
    const fail = (err: OtlpBodyError) => {
      over = true;
      chunks.length = 0;
      sink?.drop();
      cleanup();
      stream.resume();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > o.limit) return fail(new OtlpBodyError(413, `The export request exceeds ${o.limit} bytes`));
      o.onBytes?.(size);
      if (sink === null && size > o.inlineBytes) {
        sink = o.open();
        for (const c of chunks) sink.push(c);
        chunks.length = 0;
      }
      if (sink !== null) sink.push(chunk);
      else chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(sink !== null ? { body: null, sink } : { body: Buffer.concat(chunks, size), sink: null });
    };
    const onError = () => fail(new OtlpBodyError(400, 'The export request was interrupted before it ended'));
    const cleanup = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('aborted', onError);
    };
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    stream.on('aborted', onError);
  });
}

/** Content-Encoding as a body's encoding: identity or gzip, else 415. */
export function bodyEncoding(encoding: string | undefined): 'identity' | 'gzip' {
  const e = (encoding ?? 'identity').trim().toLowerCase();
  if (e === 'identity' || e === '') return 'identity';
  if (e !== 'gzip') throw new OtlpBodyError(415, `Unsupported Content-Encoding '${e}'; use gzip or none`);
  return 'gzip';
}

/**
 * A gzipped body inflated, at most `limit` bytes of output: null past it (maxOutputLength stops inflating
 * as soon as the output passes the limit, so a bomb costs no more); 400 when it is not gzip.
 */
export function gunzipWithin(body: Uint8Array, limit: number): Buffer | null {
  try {
    return gunzipSync(body, { maxOutputLength: limit });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError)
      return null;
    throw new OtlpBodyError(400, 'The body is not valid gzip (Content-Encoding: gzip)');
  }
}

/** The body decompressed as its Content-Encoding says, never past `limit` bytes of output (413 past it). */
export function decoded(body: Uint8Array, encoding: string | undefined, limit: number): Uint8Array {
  if (bodyEncoding(encoding) === 'identity') return body;
  const out = gunzipWithin(body, limit);
  if (out === null)
    throw new OtlpBodyError(413, `The export request exceeds ${limit} bytes once decompressed`);
  return out;
}
