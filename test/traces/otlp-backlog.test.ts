import type protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { otlpTypes } from '../helpers/otlp-proto.js';
import { manySpans } from './bombs.js';
import { settled, storedSpanCount } from './helpers.js';

/**
 * The trace store's backlog bounds what an export may add (issue #51): a request whose spans, with those of
 * other exports not stored yet, would pass the store's bound (EVALGATE_LOG_MAX_BUFFERED) is answered 429 at
 * once, with Retry-After and nothing of it taken, instead of waiting for room behind them; one that fits
 * is taken, and so is any request when nothing is waiting. The lane here stores only when flushed (a batch
 * size and a flush interval past anything sent), so the backlog stays as the test makes it.
 */
let h: Harness;
let status: protobuf.Type;

beforeAll(async () => {
  h = await startHarness({
    env: {
      EVALGATE_LOG_MAX_BUFFERED: '1000',
      EVALGATE_LOG_BATCH_SIZE: '10000',
      EVALGATE_LOG_FLUSH_MS: '60000',
    },
  });
  expect((await h.call('POST', '/v1/containers', { body: { label: 'backlog' } })).status).toBe(201);
  status = otlpTypes().status;
}, 60_000);
afterAll(async () => {
  await h.close();
});

const PROTO = { 'content-type': 'application/x-protobuf', 'x-evalgate-container': 'backlog' };

async function post(body: Uint8Array, key = h.admin.key) {
  const res = await fetch(`${h.url}/v1/traces`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, ...PROTO },
    body,
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const decoded =
    res.status === 200 ? {} : (status.toObject(status.decode(bytes)) as { code?: number; message?: string });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), ...decoded };
}

const stored = () => storedSpanCount(h);

async function busyTotal(): Promise<number> {
  const res = await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${h.admin.key}` } });
  return Number(/^evalgate_otlp_busy_total (\d+)/m.exec(await res.text())?.[1] ?? Number.NaN);
}

describe("OTLP ingest and the trace store's backlog", () => {
  it('answers 429 with Retry-After, taking nothing, to an export that would pass the bound', async () => {
    const busyBefore = await busyTotal();
    expect((await post(manySpans(600))).status).toBe(200);
    expect(h.services.traces.stats().buffered).toBe(600);

    const refused = await post(manySpans(600));
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBe('1');
    // google.rpc.Code RESOURCE_EXHAUSTED, which OTLP exporters retry after the delay asked.
    expect(refused.code).toBe(8);
    expect(refused.message).toMatch(/trace store is busy: 600 spans .* nothing of it was taken/);
    expect(h.services.traces.stats().buffered).toBe(600);
    expect(await busyTotal()).toBe(busyBefore + 1);
    // An export without spans adds nothing to the backlog: it is taken whatever the backlog.
    expect((await post(manySpans(0))).status).toBe(200);

    // One that fits beside the backlog is taken.
    expect((await post(manySpans(400))).status).toBe(200);
    expect(h.services.traces.stats().buffered).toBe(1000);

    // Once stored, the refused export sent again is taken.
    await settled(h);
    expect(await stored()).toBe(1000);
    expect((await post(manySpans(600))).status).toBe(200);
    await settled(h);
    expect(await stored()).toBe(1600);
  }, 60_000);

  it('takes an export larger than the bound whole when nothing else waits', async () => {
    await settled(h);
    const before = await stored();
    // The lane stores as room is needed: its batches are flushed as the export waits for room.
    const waiting = post(manySpans(2_500));
    const flushing = setInterval(() => void h.services.traces.flush(), 50);
    try {
      expect((await waiting).status).toBe(200);
    } finally {
      clearInterval(flushing);
    }
    await settled(h);
    expect(await stored()).toBe(before + 2_500);
  }, 60_000);
});
