// Database-independent: reading an OTLP request body is a stream and zlib operation with no store.
import { PassThrough, Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decoded, OtlpBodyError, readBounded } from '../../src/traces/otlp/body.js';

async function failure(p: Promise<unknown>): Promise<OtlpBodyError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof OtlpBodyError) return err;
    throw err;
  }
  throw new Error('expected an OtlpBodyError');
}

describe('readBounded', () => {
  it('reads a body of up to the limit whole', async () => {
    const body = await readBounded(Readable.from([Buffer.from('ab'), Buffer.from('cd')]), 4);
    expect(body.toString()).toBe('abcd');
  });

  it('refuses with 413 as soon as the body passes the limit', async () => {
    const stream = new PassThrough();
    const reading = readBounded(stream, 4);
    stream.write(Buffer.from('abc'));
    stream.write(Buffer.from('de'));
    const err = await failure(reading);
    expect(err.status).toBe(413);
    expect(err.message).toBe('The export request exceeds 4 bytes');
    stream.end();
  });

  it('refuses with 400 a body interrupted before its end', async () => {
    const stream = new PassThrough();
    const reading = readBounded(stream, 100);
    stream.write(Buffer.from('abc'));
    stream.destroy(new Error('socket hang up'));
    const err = await failure(reading);
    expect(err.status).toBe(400);
    expect(err.message).toBe('The export request was interrupted before it ended');
  });
});

describe('decoded', () => {
  const text = Buffer.from('x'.repeat(1000));

  it('returns an identity body as it is, and inflates gzip', async () => {
    expect(await decoded(text, undefined, 10)).toBe(text);
    expect(await decoded(text, ' Identity ', 10)).toBe(text);
    expect(await decoded(text, '', 10)).toBe(text);
    expect((await decoded(gzipSync(text), 'GZIP', 1000)).equals(text)).toBe(true);
  });

  it('refuses other encodings with 415', async () => {
    const err = await failure(decoded(text, 'br', 1000));
    expect(err.status).toBe(415);
    expect(err.message).toBe("Unsupported Content-Encoding 'br'; use gzip or none");
  });

  it('stops inflating past the limit with 413, and refuses what is not gzip with 400', async () => {
    const bomb = gzipSync(Buffer.alloc(10_000_000));
    expect(bomb.length).toBeLessThan(20_000);
    const big = await failure(decoded(bomb, 'gzip', 1000));
    expect(big.status).toBe(413);
    expect(big.message).toBe('The export request exceeds 1000 bytes once decompressed');
    const junk = await failure(decoded(Buffer.from('not gzip at all'), 'gzip', 1000));
    expect(junk.status).toBe(400);
  });
});
