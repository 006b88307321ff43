// Database-independent: reading an OTLP request body is a stream and zlib operation with no store.
import { PassThrough, Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  type ChunkSink,
  decoded,
  gunzipWithin,
  OtlpBodyError,
  receiveBody,
} from '../../src/traces/otlp/body.js';

async function failure(p: Promise<unknown>): Promise<OtlpBodyError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof OtlpBodyError) return err;
    throw err;
  }
  throw new Error('expected an OtlpBodyError');
}

/** A sink that keeps what it is handed, to show what left the reading thread and when. */
class Kept implements ChunkSink {
  chunks: Uint8Array[] = [];
  dropped = false;
  push(chunk: Uint8Array): void {
    this.chunks.push(chunk);
  }
  drop(): void {
    this.dropped = true;
  }
}

/** A body read whole (below any size that would open a sink), within `limit` bytes. */
async function readWhole(stream: Readable, limit: number): Promise<Buffer> {
  const received = await receiveBody(stream, {
    limit,
    inlineBytes: Number.POSITIVE_INFINITY,
    open: () => new Kept(),
  });
  if (received.body === null) throw new Error('expected the body whole');
  return received.body;
}

describe('receiveBody, a body read whole', () => {
  it('reads a body of up to the limit whole', async () => {
    const body = await readWhole(Readable.from([Buffer.from('ab'), Buffer.from('cd')]), 4);
    expect(body.toString()).toBe('abcd');
  });

  it('refuses with 413 as soon as the body passes the limit', async () => {
    const stream = new PassThrough();
    const reading = readWhole(stream, 4);
    stream.write(Buffer.from('abc'));
    stream.write(Buffer.from('de'));
    const err = await failure(reading);
    expect(err.status).toBe(413);
    expect(err.message).toBe('The export request exceeds 4 bytes');
    stream.end();
  });

  it('refuses with 400 a body interrupted before its end', async () => {
    const stream = new PassThrough();
    const reading = readWhole(stream, 100);
    stream.write(Buffer.from('abc'));
    stream.destroy(new Error('socket hang up'));
    const err = await failure(reading);
    expect(err.status).toBe(400);
    expect(err.message).toBe('The export request was interrupted before it ended');
  });
});

describe('receiveBody', () => {
  it('reads a body of up to the inline size whole, opening no sink', async () => {
    let opened = 0;
    const got = await receiveBody(Readable.from([Buffer.from('ab'), Buffer.from('cd')]), {
      limit: 100,
      inlineBytes: 4,
      open: () => {
        opened += 1;
        return new Kept();
      },
    });
    expect(got.body?.toString()).toBe('abcd');
    expect(opened).toBe(0);
  });

  it('hands a larger body to the sink chunk by chunk, the same chunks, never joining them', async () => {
    const parts = ['abc', 'def', 'ghi'].map((t) => Buffer.from(t));
    const sink = new Kept();
    const seen: number[] = [];
    const stream = new PassThrough();
    const reading = receiveBody(stream, {
      limit: 100,
      inlineBytes: 4,
      open: () => sink,
      onBytes: (n) => seen.push(n),
    });
    stream.write(parts[0]);
    stream.write(parts[1]);
    await new Promise((r) => setImmediate(r));
    // Opened once the body passed the inline size, with what was held so far.
    expect(sink.chunks).toEqual([parts[0], parts[1]]);
    stream.end(parts[2]);
    const got = await reading;
    expect(got.body).toBeNull();
    expect(got.sink).toBe(sink);
    for (const [i, c] of sink.chunks.entries()) expect(c).toBe(parts[i]);
    expect(seen).toEqual([3, 6, 9]);
  });

  it('opens the sink before the first chunk when Content-Length says the body is large', async () => {
    const sink = new Kept();
    const stream = new PassThrough();
    const reading = receiveBody(stream, { limit: 100, inlineBytes: 4, contentLength: 9, open: () => sink });
    const first = Buffer.from('ab');
    stream.write(first);
    await new Promise((r) => setImmediate(r));
    expect(sink.chunks).toEqual([first]);
    stream.end(Buffer.from('cdefghi'));
    expect((await reading).sink).toBe(sink);
  });

  it('refuses with 413 past the limit, dropping the sink and forwarding nothing more', async () => {
    const sink = new Kept();
    const stream = new PassThrough();
    const reading = receiveBody(stream, { limit: 8, inlineBytes: 4, open: () => sink });
    stream.write(Buffer.from('abcde'));
    stream.write(Buffer.from('fghij'));
    stream.write(Buffer.from('klm'));
    const err = await failure(reading);
    expect([err.status, err.message]).toEqual([413, 'The export request exceeds 8 bytes']);
    expect(sink.dropped).toBe(true);
    expect(sink.chunks.map(String)).toEqual(['abcde']);
    stream.end();
  });

  it('refuses with 413 at once a Content-Length past the limit, and drops the sink of a body cut short', async () => {
    const over = await failure(
      receiveBody(new PassThrough(), { limit: 8, inlineBytes: 4, contentLength: 9, open: () => new Kept() }),
    );
    expect(over.status).toBe(413);
    const sink = new Kept();
    const stream = new PassThrough();
    const reading = receiveBody(stream, { limit: 100, inlineBytes: 4, contentLength: 50, open: () => sink });
    stream.write(Buffer.from('abcdef'));
    stream.destroy(new Error('socket hang up'));
    const cut = await failure(reading);
    expect([cut.status, cut.message]).toEqual([400, 'The export request was interrupted before it ended']);
    expect(sink.dropped).toBe(true);
  });
});

describe('decoded', () => {
  const text = Buffer.from('x'.repeat(1000));
  const thrown = (f: () => unknown): OtlpBodyError => {
    try {
      f();
    } catch (err) {
      if (err instanceof OtlpBodyError) return err;
      throw err;
    }
    throw new Error('expected an OtlpBodyError');
  };

  it('returns an identity body as it is, and inflates gzip', () => {
    expect(decoded(text, undefined, 10)).toBe(text);
    expect(decoded(text, ' Identity ', 10)).toBe(text);
    expect(decoded(text, '', 10)).toBe(text);
    expect(Buffer.from(decoded(gzipSync(text), 'GZIP', 1000)).equals(text)).toBe(true);
  });

  it('refuses other encodings with 415', () => {
    const err = thrown(() => decoded(text, 'br', 1000));
    expect(err.status).toBe(415);
    expect(err.message).toBe("Unsupported Content-Encoding 'br'; use gzip or none");
  });

  it('stops inflating past the limit with 413, and refuses what is not gzip with 400', () => {
    const bomb = gzipSync(Buffer.alloc(10_000_000));
    expect(bomb.length).toBeLessThan(20_000);
    const big = thrown(() => decoded(bomb, 'gzip', 1000));
    expect(big.status).toBe(413);
    expect(big.message).toBe('The export request exceeds 1000 bytes once decompressed');
    expect(gunzipWithin(bomb, 1000)).toBeNull();
    const junk = thrown(() => decoded(Buffer.from('not gzip at all'), 'gzip', 1000));
    expect(junk.status).toBe(400);
    expect(junk.message).toBe('The body is not valid gzip (Content-Encoding: gzip)');
  });
});
