// Database-independent: the decode pool's threads receive bodies chunk by chunk and decode them.
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { OtlpBodyError } from '../../src/traces/otlp/body.js';
import {
  type BodyJob,
  decodePoolState,
  decodeSmall,
  decodeThreadsHeld,
  INLINE_BYTES,
  openBodyJob,
} from '../../src/traces/otlp/decode-pool.js';
import { DEFAULT_OTLP_LIMITS } from '../../src/traces/otlp/limits.js';
import { manySpans } from './bombs.js';

const LIMIT = 10 * 1024 * 1024;

function open(
  abort: AbortSignal,
  encoding: 'identity' | 'gzip' = 'identity',
  onInflated?: (n: number) => void,
) {
  return openBodyJob(
    { signal: 'spans', as: 'protobuf', encoding, limit: LIMIT, limits: DEFAULT_OTLP_LIMITS, onInflated },
    abort,
  );
}

/** The body handed over in chunks of `size` bytes, each in memory of its own (as a socket's are). */
function pushAll(job: BodyJob<'spans'>, body: Buffer, size = 16 * 1024): void {
  for (let at = 0; at < body.length; at += size) job.push(Uint8Array.from(body.subarray(at, at + size)));
}

const spansOf = (request: { resourceSpans: { scopeSpans: { spans: unknown[] }[] }[] }) =>
  request.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)).length;

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}

describe('the decode pool', () => {
  it('receives a body chunk by chunk, transferred, and decodes it on its thread', async () => {
    const body = manySpans(3_000);
    const before = decodePoolState().forwarded;
    const job = open(new AbortController().signal);
    pushAll(job, body);
    // The thread holds the chunks (the event loop does not): the whole body, before its end.
    expect(await decodeThreadsHeld()).toEqual({ jobs: 1, bytes: body.length });
    const request = await job.end();
    expect(spansOf(request as never)).toBe(3_000);
    const after = decodePoolState().forwarded;
    expect(after.bytes - before.bytes).toBe(body.length);
    const chunks = Math.ceil(body.length / (16 * 1024));
    expect(after.chunks - before.chunks).toBe(chunks);
    expect(after.transferred - before.transferred).toBe(chunks);
    expect(decodePoolState().jobs).toBe(0);
    expect(await decodeThreadsHeld()).toEqual({ jobs: 0, bytes: 0 });
  });

  it('copies a chunk that is a slice of larger memory, and leaves the caller its memory', async () => {
    const body = manySpans(2_000);
    const big = Buffer.concat([Buffer.alloc(7), body, Buffer.alloc(9)]);
    const slice = big.subarray(7, 7 + body.length);
    const before = decodePoolState().forwarded;
    const job = open(new AbortController().signal);
    job.push(slice);
    expect(spansOf((await job.end()) as never)).toBe(2_000);
    expect(decodePoolState().forwarded.copied - before.copied).toBe(1);
    // Not transferred: the caller's buffer is still readable.
    expect(big.length).toBe(body.length + 16);
    expect(slice.equals(body)).toBe(true);
  });

  it('gunzips on the thread, tells the decompressed size, and refuses a bomb and bad gzip', async () => {
    const body = manySpans(2_000);
    let inflated = 0;
    const job = open(new AbortController().signal, 'gzip', (n) => {
      inflated = n;
    });
    pushAll(job, gzipSync(body), 1024);
    expect(spansOf((await job.end()) as never)).toBe(2_000);
    expect(inflated).toBe(body.length);

    const bomb = open(new AbortController().signal, 'gzip');
    pushAll(bomb, gzipSync(Buffer.alloc(LIMIT + 1)));
    const big = (await failure(bomb.end())) as OtlpBodyError;
    expect(big).toBeInstanceOf(OtlpBodyError);
    expect([big.status, big.message]).toEqual([
      413,
      `The export request exceeds ${LIMIT} bytes once decompressed`,
    ]);

    const junk = open(new AbortController().signal, 'gzip');
    junk.push(Buffer.from('not gzip at all'));
    const bad = (await failure(junk.end())) as OtlpBodyError;
    expect([bad.status, bad.message]).toEqual([400, 'The body is not valid gzip (Content-Encoding: gzip)']);
  });

  it('holds several bodies at once on a thread; one whose client left is dropped, the others go on', async () => {
    const started = decodePoolState().started;
    const stays = new AbortController();
    const leaves = new AbortController();
    const a = open(stays.signal);
    const b = open(leaves.signal);
    const bodyA = manySpans(2_000);
    const bodyB = manySpans(2_500);
    pushAll(a, bodyA.subarray(0, 40_000));
    pushAll(b, bodyB.subarray(0, 50_000));
    expect(await decodeThreadsHeld()).toEqual({ jobs: 2, bytes: 90_000 });
    expect(decodePoolState().jobs).toBe(2);

    const left = new OtlpBodyError(400, 'The client left');
    leaves.abort(left);
    expect(await failure(b.end())).toBe(left);
    expect(decodePoolState().jobs).toBe(1);
    expect(await decodeThreadsHeld()).toEqual({ jobs: 1, bytes: 40_000 });

    pushAll(a, bodyA.subarray(40_000));
    expect(spansOf((await a.end()) as never)).toBe(2_000);
    expect(decodePoolState().jobs).toBe(0);
    expect(await decodeThreadsHeld()).toEqual({ jobs: 0, bytes: 0 });
    // No thread was stopped for the job that left.
    expect(decodePoolState().started).toBe(started);
  });

  it('discards the answer of a decode whose client left while it ran, without stopping the thread', async () => {
    const started = decodePoolState().started;
    const threads = decodePoolState().threads;
    const leaves = new AbortController();
    const job = open(leaves.signal);
    pushAll(job, manySpans(50_000));
    const answer = job.end();
    const left = new OtlpBodyError(400, 'The client left');
    leaves.abort(left);
    expect(await failure(answer)).toBe(left);
    expect(decodePoolState()).toMatchObject({ jobs: 0, started, threads });
    // The thread, still the same, decodes the next body once it is done with that one.
    const next = open(new AbortController().signal);
    pushAll(next, manySpans(2_000));
    expect(spansOf((await next.end()) as never)).toBe(2_000);
    expect(decodePoolState()).toMatchObject({ jobs: 0, started, threads });
  });

  it('drops a job given up by the event loop (its body past the limit)', async () => {
    const job = open(new AbortController().signal);
    pushAll(job, manySpans(2_000).subarray(0, 30_000));
    job.drop();
    expect(((await failure(job.end())) as OtlpBodyError).status).toBe(400);
    expect(await decodeThreadsHeld()).toEqual({ jobs: 0, bytes: 0 });
  });

  it('decodes a small body inline, and hands one that inflates past the inline size over compressed', async () => {
    const spec = {
      signal: 'spans' as const,
      as: 'protobuf' as const,
      limit: LIMIT,
      limits: DEFAULT_OTLP_LIMITS,
    };
    const abort = new AbortController().signal;
    const small = manySpans(100);
    let before = decodePoolState().forwarded.bytes;
    expect(spansOf((await decodeSmall({ ...spec, encoding: 'gzip' }, gzipSync(small), abort)) as never)).toBe(
      100,
    );
    expect(decodePoolState().forwarded.bytes).toBe(before);

    const large = manySpans(5_000);
    expect(large.length).toBeGreaterThan(INLINE_BYTES);
    const packed = gzipSync(large);
    expect(packed.length).toBeLessThan(INLINE_BYTES);
    let inflated = 0;
    const onInflated = (n: number) => {
      inflated = n;
    };
    before = decodePoolState().forwarded.bytes;
    const request = await decodeSmall({ ...spec, encoding: 'gzip', onInflated }, packed, abort);
    expect(spansOf(request as never)).toBe(5_000);
    // What went to the thread is the compressed body, inflated there.
    expect(decodePoolState().forwarded.bytes - before).toBe(packed.length);
    expect(inflated).toBe(large.length);

    const bomb = gzipSync(Buffer.alloc(LIMIT + 1));
    expect(bomb.length).toBeLessThan(INLINE_BYTES);
    const err = (await failure(decodeSmall({ ...spec, encoding: 'gzip' }, bomb, abort))) as OtlpBodyError;
    expect([err.status, err.message]).toEqual([
      413,
      `The export request exceeds ${LIMIT} bytes once decompressed`,
    ]);
  });
});
