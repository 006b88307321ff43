import { context, trace as otelTrace } from '@opentelemetry/api';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pruneTaskLogs } from '../../src/capture/log-retention.js';
import { pruneTraces } from '../../src/capture/trace-retention.js';
import { loadContainer } from '../../src/catalog/containers/resolve.js';
import { randomHex } from '../../src/shared/ids.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { sdkProvider, settled } from './helpers.js';

/**
 * Retention: spans and traces older than EVALGATE_TRACE_RETENTION_DAYS, and task logs older than
 * EVALGATE_LOG_RETENTION_DAYS, go in bounded batches.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { EVALGATE_TRACE_RETENTION_DAYS: '7', EVALGATE_LOG_RETENTION_DAYS: '30' } });
});
afterAll(async () => {
  await h.close();
});

/** A trace of `spans` spans, its root with one GenAI user-message event sent as an OTLP log record. */
async function trace(spans: number): Promise<string> {
  const provider = sdkProvider(h, { protocol: 'protobuf' });
  const loggers = new LoggerProvider({
    processors: [
      new SimpleLogRecordProcessor({
        exporter: new OTLPLogExporter({
          url: `${h.url}/v1/logs`,
          headers: { authorization: `Bearer ${h.admin.key}` },
        }),
      }),
    ],
  });
  const tracer = provider.getTracer('retention');
  let id = '';
  tracer.startActiveSpan('root', (root) => {
    id = root.spanContext().traceId;
    loggers.getLogger('retention').emit({
      eventName: 'gen_ai.user.message',
      body: { content: 'hello' },
      context: otelTrace.setSpan(context.active(), root),
    });
    for (let i = 0; i < spans - 1; i++) tracer.startSpan(`child ${i}`).end();
    root.end();
  });
  await loggers.forceFlush();
  await loggers.shutdown();
  await provider.forceFlush();
  await provider.shutdown();
  await settled(h);
  return id;
}

const logEvents = async (traceId: string) =>
  (
    await h.services.db
      .selectFrom('span_log_events')
      .select('event_key')
      .where('trace_id', '=', traceId)
      .execute()
  ).length;

describe('trace retention', () => {
  it('deletes expired spans, traces and GenAI log events in batches, keeps the others', async () => {
    const old = await trace(5);
    const fresh = await trace(3);
    expect(await logEvents(old)).toBe(1);
    expect(await logEvents(fresh)).toBe(1);
    const longAgo = new Date(Date.now() - 30 * 86_400_000).toISOString();
    await h.services.db
      .updateTable('span_log_events')
      .set({ received_at: longAgo })
      .where('trace_id', '=', old)
      .execute();
    await h.services.db
      .updateTable('spans')
      .set({ received_at: longAgo })
      .where('trace_id', '=', old)
      .execute();
    await h.services.db
      .updateTable('traces')
      .set({ updated_at: longAgo })
      .where('trace_id', '=', old)
      .execute();

    // Batches of 2: three rounds for the 5 spans.
    const cutoff = new Date(Date.now() - 7 * 86_400_000).toISOString();
    expect(await pruneTraces(h.services.db, cutoff, 2)).toEqual({ spans: 5, traces: 1, log_events: 1 });
    expect(await logEvents(old)).toBe(0);
    expect(await logEvents(fresh)).toBe(1);
    expect((await h.call('GET', `/v1/traces/${old}`)).status).toBe(404);
    const kept = await h.call('GET', `/v1/traces/${fresh}`);
    expect(kept.body.spans).toHaveLength(3);
    expect((await h.call('GET', '/v1/traces')).body.data.map((t: { id: string }) => t.id)).toEqual([fresh]);
    // The server's own pass (EVALGATE_TRACE_RETENTION_DAYS=7) finds nothing more to delete.
    expect(await h.services.traces.prune()).toEqual({ spans: 0, traces: 0, log_events: 0, task_logs: 0 });
    // A week on, the fresh trace expires too.
    expect(await h.services.traces.prune(new Date(Date.now() + 8 * 86_400_000))).toEqual({
      spans: 3,
      traces: 1,
      log_events: 1,
      task_logs: 0,
    });
  });

  it('deletes expired task logs in batches; what referred to them still reads', async () => {
    const container = await loadContainer(h.services.db, h.admin.projectId, null);
    const traceId = randomHex(16);
    const ids = Array.from({ length: 7 }, (_, i) => `log_retention_${i}`);
    // Recorded as gateway calls are: the real writer, each call a span of one trace.
    for (const [i, id] of ids.entries()) {
      h.services.logWriter.write({
        id,
        projectId: h.admin.projectId,
        containerId: container,
        model: 'gpt-4o-mini',
        input: [{ role: 'user', content: `question ${i}` }],
        output: `answer ${i}`,
        usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
        latencyMs: 5,
        cost: 0.001,
        status: 'success',
        error: null,
        metadata: { route: 'chat' },
        createdAt: new Date().toISOString(),
        traceId,
        spanId: randomHex(8),
      });
    }
    await h.services.logWriter.flush();
    const expired = ids.slice(0, 5);
    const longAgo = new Date(Date.now() - 40 * 86_400_000).toISOString();
    await h.services.db
      .updateTable('task_logs')
      .set({ created_at: longAgo })
      .where('id', 'in', expired)
      .execute();

    // Batches of 2: three statements for the 5 expired logs; the 2 others stay.
    expect(await pruneTaskLogs(h.services.db, new Date(Date.now() - 30 * 86_400_000).toISOString(), 2)).toBe(
      5,
    );
    const left = await h.services.db.selectFrom('task_logs').select('id').where('id', 'in', ids).execute();
    expect(left.map((r) => r.id).sort()).toEqual(ids.slice(5));
    const listed = await h.call('GET', `/v1/containers/${container}/logs?limit=100`);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data.map((l: { id: string }) => l.id).sort()).toEqual(ids.slice(5));

    // The trace still has all 7 calls: 2 from their logs, 5 from the span rows that outlived theirs.
    const res = await h.call('GET', `/v1/traces/${traceId}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.spans).toHaveLength(7);
    expect(res.body.spans.every((s: any) => s.source === 'gateway')).toBe(true);
    expect(res.body.totals.model_call_count).toBe(7);
    expect(res.body.totals.usage.total_tokens).toBe(84);
    // The server's pass (EVALGATE_LOG_RETENTION_DAYS=30) finds nothing more; 31 days on, the rest goes.
    expect((await h.services.traces.prune()).task_logs).toBe(0);
    expect(
      (await h.services.traces.prune(new Date(Date.now() + 31 * 86_400_000))).task_logs,
    ).toBeGreaterThanOrEqual(2);
  });
});
