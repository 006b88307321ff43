import type { Readable } from 'node:stream';
import { gunzip } from 'node:zlib';

/** Why an export request's body could not be read: answered as OTLP's error body, with this status. */
export class OtlpBodyError extends Error {
  constructor(
    readonly status: 400 | 413 | 415,
    message: string,
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

/**
 * Reads the stream into one buffer. Past `limit` bytes it stops keeping what arrives and throws 413 at
 * once; the rest of the body is left to Node to discard, the connection closing after the answer.
 */
export function readBounded(stream: Readable, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    const onData = (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        cleanup();
        stream.resume();
        reject(new OtlpBodyError(413, `The export request exceeds ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = () => {
      cleanup();
      reject(new OtlpBodyError(400, 'The export request was interrupted before it ended'));
    };
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

/** The body decompressed as its Content-Encoding says, never past `limit` bytes of output. */
export async function decoded(body: Buffer, encoding: string | undefined, limit: number): Promise<Buffer> {
  const e = (encoding ?? 'identity').trim().toLowerCase();
  if (e === 'identity' || e === '') return body;
  if (e !== 'gzip') throw new OtlpBodyError(415, `Unsupported Content-Encoding '${e}'; use gzip or none`);
  return new Promise((resolve, reject) => {
    // maxOutputLength stops inflating as soon as the output passes the limit: a bomb costs no more.
    gunzip(body, { maxOutputLength: limit }, (err, out) => {
      if (!err) return resolve(out);
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
        return reject(new OtlpBodyError(413, `The export request exceeds ${limit} bytes once decompressed`));
      }
      reject(new OtlpBodyError(400, 'The body is not valid gzip (Content-Encoding: gzip)'));
    });
  });
}
