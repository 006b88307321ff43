import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { waitFor } from '../helpers/wait.js';
import { type Receiver, startReceiver } from './receiver.js';

/**
 * A collector that is down (port closed) or stalls (reads, never answers) costs the gateway nothing it
 * can feel: calls are answered as fast as with export off, the export's queue stays at its bound (the
 * rest dropped and counted), and the failures show in the metrics.
 */

const MODEL = 'openai/gpt-4o-mini';
const CALLS = 40;
const QUEUE = 16;

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Median latency of `CALLS` sequential gateway calls, in ms. */
async function medianLatency(g: Gateway): Promise<number> {
  const client = g.client();
  const times: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    const res = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: `q${i}` }],
    });
    times.push(performance.now() - t);
    expect(res.choices[0]!.message.content).toBe('ok');
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const bounded = {
  OTEL_BSP_MAX_QUEUE_SIZE: String(QUEUE),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4',
  OTEL_BSP_SCHEDULE_DELAY: '10',
};

describe('with the collector down', () => {
  let hanging: Receiver;
  let baseline: Gateway | null = null;
  let stalled: Gateway | null = null;
  let refused: Gateway | null = null;
  beforeAll(async () => {
    hanging = await startReceiver('hang');
  });
  afterAll(async () => {
    await baseline?.close();
    await stalled?.close();
    await refused?.close();
    await hanging?.close();
  });

  it('answers calls as fast as with export off while the collector stalls, and keeps the queue bounded', async () => {
    baseline = await startGateway();
    baseline.mock.set({ reply: () => 'ok' });
    await medianLatency(baseline); // warm-up: connections, caches, JIT
    const off = await medianLatency(baseline);
    await baseline.close();
    baseline = null;

    stalled = await startGateway({
      OTEL_EXPORTER_OTLP_ENDPOINT: hanging.url,
      OTEL_EXPORTER_OTLP_TIMEOUT: '60000',
      ...bounded,
    });
    stalled.mock.set({ reply: () => 'ok' });
    await medianLatency(stalled);
    const on = await medianLatency(stalled);
    // Generous: the same order of magnitude, not a waiting exporter's seconds.
    expect(
      on,
      `median ${on.toFixed(1)} ms with a stalled collector, ${off.toFixed(1)} ms with export off`,
    ).toBeLessThan(off * 3 + 25);
    const exporter = stalled.h.services.otelExport!;
    await waitFor(
      () => exporter.counts().spans.dropped >= 2 * CALLS - QUEUE,
      10_000,
      'spans dropped past the bound',
    );
    const { spans } = exporter.counts();
    expect(spans.pending).toBeLessThanOrEqual(QUEUE);
    expect(spans.exported).toBe(0);
    expect(hanging.requests.length).toBeGreaterThan(0);
    const { text } = await stalled.h.call('GET', '/metrics', { unchecked: true });
    expect(text).toMatch(/evalgate_otel_export_items_total\{signal="spans",outcome="dropped"\} [1-9]/);
    expect(text).toMatch(/evalgate_otel_export_pending\{signal="spans"\} ([0-9]|1[0-6])\n/);
  });

  it('counts the spans a refused connection fails, and still answers every call', async () => {
    refused = await startGateway({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await closedPort()}`,
      OTEL_EXPORTER_OTLP_TIMEOUT: '300',
      ...bounded,
    });
    refused.mock.set({ reply: () => 'ok' });
    await medianLatency(refused);
    const exporter = refused.h.services.otelExport!;
    await waitFor(() => exporter.counts().spans.failed > 0, 15_000, 'failed exports counted');
    expect(exporter.counts().spans.exported).toBe(0);
    const { text } = await refused.h.call('GET', '/metrics', { unchecked: true });
    expect(text).toMatch(/evalgate_otel_export_items_total\{signal="spans",outcome="failed"\} [1-9]/);
  });
});
