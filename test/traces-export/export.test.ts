import { SpanKind } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INGESTED_LOG_PREFIX } from '../../src/capture/types.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { waitFor } from '../helpers/wait.js';
import { logsOf, sdkProvider } from '../traces/helpers.js';
import { type Receiver, startReceiver } from './receiver.js';

/**
 * The gateway's own telemetry out: with the standard OTLP variables set, every recorded call is one GenAI
 * client span (current conventions) with the call's trace and span ids as its task log keeps them, and
 * every score over a task log one `gen_ai.evaluation.result` event parented to that span, received by a
 * real OTLP/HTTP receiver decoding with the official protobuf definitions.
 */

const MODEL = 'openai/gpt-4o-mini';
const ANSWER = 'Hello from the mock upstream.';
const SPAN_KIND_CLIENT = 3;

function otelEnv(receiver: Receiver, extra: Record<string, string> = {}): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=s3cret%20token',
    OTEL_SERVICE_NAME: 'evalgate-test',
    OTEL_BSP_SCHEDULE_DELAY: '20',
    ...extra,
  };
}

async function chat(g: Gateway, content: string, headers: Record<string, string> = {}) {
  const { data, response } = await g
    .client({ headers })
    .chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content },
      ],
      temperature: 0.2,
    })
    .withResponse();
  return { data, logId: response.headers.get('x-evalgate-log-id') ?? '' };
}

async function taskLog(g: Gateway, id: string) {
  await g.h.services.logWriter.flush();
  return g.h.services.db
    .selectFrom('task_logs')
    .select(['id', 'trace_id', 'span_id'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

describe('export of calls and scores (content capture off)', () => {
  let receiver: Receiver;
  let g: Gateway;
  beforeAll(async () => {
    receiver = await startReceiver();
    g = await startGateway(otelEnv(receiver));
    g.mock.set({ reply: () => ANSWER });
    expect((await g.h.call('POST', '/v1/containers', { body: { label: 'bot' } })).status).toBe(201);
  });
  afterAll(async () => {
    await g?.close();
    await receiver?.close();
  });

  it('sends one GenAI client span per gateway call, with the task log trace and span ids', async () => {
    const calls = [];
    for (const q of ['one', 'two', 'three']) calls.push(await chat(g, q, { 'x-evalgate-container': 'bot' }));
    await waitFor(() => receiver.spans.length >= 3, 10_000, 'three spans');
    await new Promise((r) => setTimeout(r, 100));
    expect(receiver.spans).toHaveLength(3);
    for (const { data, logId } of calls) {
      expect(receiver.spans.find((s) => s.attributes['evalgate.task_log.id'] === logId)?.parentSpanId).toBe(
        '',
      );
      const log = await taskLog(g, logId);
      expect(log.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(log.span_id).toMatch(/^[0-9a-f]{16}$/);
      const span = receiver.spans.find((s) => s.attributes['evalgate.task_log.id'] === logId);
      expect(span, `span of ${logId}`).toBeDefined();
      expect(span).toMatchObject({
        traceId: log.trace_id,
        spanId: log.span_id,
        name: `chat ${MODEL}`,
        kind: SPAN_KIND_CLIENT,
        status: { code: 0 },
      });
      expect(span!.endMs).toBeGreaterThanOrEqual(span!.startMs);
      expect(span!.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': MODEL,
        'gen_ai.response.id': data.id,
        'gen_ai.response.finish_reasons': ['stop'],
        'gen_ai.usage.input_tokens': 12,
        'gen_ai.usage.output_tokens': 7,
        'gen_ai.request.temperature': 0.2,
      });
      expect(typeof span!.attributes['gen_ai.response.model']).toBe('string');
      // No message content unless the operator opts in.
      expect(span!.attributes['gen_ai.input.messages']).toBeUndefined();
      expect(span!.attributes['gen_ai.output.messages']).toBeUndefined();
      expect(span!.attributes['gen_ai.system_instructions']).toBeUndefined();
      expect(span!.resource['service.name']).toBe('evalgate-test');
    }
    // The operator's headers go with every export.
    expect(receiver.requests[0]!.headers['x-collector-token']).toBe('s3cret token');
    expect(receiver.requests[0]!.headers['content-type']).toBe('application/x-protobuf');
  });

  it("exports a call that came with a traceparent as a child of the caller's span", async () => {
    const trace = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    const parent = '1122334455667788';
    const { logId } = await chat(g, 'inside a trace', { traceparent: `00-${trace}-${parent}-01` });
    await waitFor(
      () => receiver.spans.some((s) => s.attributes['evalgate.task_log.id'] === logId),
      10_000,
      'the span',
    );
    const span = receiver.spans.find((s) => s.attributes['evalgate.task_log.id'] === logId)!;
    const log = await taskLog(g, logId);
    expect(log.trace_id).toBe(trace);
    expect(span).toMatchObject({ traceId: trace, parentSpanId: parent, spanId: log.span_id });
  });

  it('marks a failed call as an error span with error.type', async () => {
    g.mock.fail({ status: 400 });
    const before = receiver.spans.length;
    await expect(chat(g, 'bad')).rejects.toThrow();
    await waitFor(() => receiver.spans.length > before, 10_000, 'the error span');
    const span = receiver.spans.at(-1)!;
    expect(span.status.code).toBe(2);
    expect(typeof span.attributes['error.type']).toBe('string');
    expect(span.name).toBe(`chat ${MODEL}`);
  });

  it('stores the model call of a span an application sent as a task log, and does not export it again', async () => {
    expect((await g.h.call('POST', '/v1/containers', { body: { label: 'app' } })).status).toBe(201);
    const provider = sdkProvider(g.h, { protocol: 'protobuf', headers: { 'x-evalgate-container': 'app' } });
    const span = provider.getTracer('app').startSpan('chat gpt-4o-mini', { kind: SpanKind.CLIENT });
    span.setAttributes({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.usage.input_tokens': 3,
      'gen_ai.usage.output_tokens': 2,
    });
    span.end();
    await provider.forceFlush();
    await provider.shutdown();
    const ingested = (await logsOf(g.h, 'app')).filter((l) => l.id.startsWith(INGESTED_LOG_PREFIX));
    expect(ingested).toHaveLength(1);
    // A gateway call recorded after it is exported: the export has had its turn at the one before.
    const { logId } = await chat(g, 'after the application span', { 'x-evalgate-container': 'app' });
    await waitFor(
      () => receiver.spans.some((s) => s.attributes['evalgate.task_log.id'] === logId),
      10_000,
      'the later call span',
    );
    expect(receiver.spans.filter((s) => s.attributes['evalgate.task_log.id'] === ingested[0].id)).toEqual([]);
  });

  it('sends each score over a task log as a gen_ai.evaluation.result event parented to its span', async () => {
    const ev = await g.h.call('POST', '/v1/evaluators', {
      body: {
        type: 'string_check',
        name: 'is-hello',
        input: '{{sample.output_text}}',
        reference: ANSWER,
        operation: 'eq',
      },
    });
    expect(ev.status, ev.text).toBe(201);
    const created = await g.h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'bot', sample: { type: 'container', container: 'bot' }, evaluators: ['is-hello'] },
    });
    expect(created.status, created.text).toBe(201);
    const runId = created.body.id as string;
    await waitFor(
      async () => (await g.h.call('GET', `/v1/evaluation/runs/${runId}`)).body.status === 'completed',
      30_000,
      'the run',
    );
    await waitFor(() => receiver.logs.length >= 3, 10_000, 'three evaluation events');
    await new Promise((r) => setTimeout(r, 100));
    expect(receiver.logs).toHaveLength(3);
    const samples = (await g.h.call('GET', `/v1/evaluation/runs/${runId}/samples?limit=10`)).body.data;
    expect(samples).toHaveLength(3);
    for (const event of receiver.logs) {
      expect(event.eventName).toBe('gen_ai.evaluation.result');
      const logId = String(event.attributes['evalgate.task_log.id']);
      const span = receiver.spans.find((s) => s.attributes['evalgate.task_log.id'] === logId)!;
      expect(span).toBeDefined();
      expect(event.traceId).toBe(span.traceId);
      expect(event.spanId).toBe(span.spanId);
      expect(event.attributes).toMatchObject({
        'gen_ai.evaluation.name': 'is-hello',
        'evalgate.evaluator.id': ev.body.id,
        'gen_ai.evaluation.score.value': 1,
        'gen_ai.evaluation.score.label': 'pass',
        'gen_ai.response.id': span.attributes['gen_ai.response.id'],
        'evalgate.run.id': runId,
      });
    }
  });

  it("sends a monitor's scores of new calls as evaluation events on their spans", async () => {
    expect((await g.h.call('POST', '/v1/containers', { body: { label: 'watched' } })).status).toBe(201);
    const monitor = await g.h.call('POST', '/v1/monitors', {
      body: { name: 'hello-watch', container: 'watched', evaluators: ['is-hello'], sampling_rate: 1 },
    });
    expect(monitor.status, monitor.text).toBe(201);
    const before = receiver.logs.length;
    const { logId } = await chat(g, 'watched call', { 'x-evalgate-container': 'watched' });
    await waitFor(
      () => receiver.logs.some((l) => l.attributes['evalgate.task_log.id'] === logId),
      30_000,
      "the monitor's event",
    );
    const events = receiver.logs.slice(before).filter((l) => l.attributes['evalgate.task_log.id'] === logId);
    expect(events).toHaveLength(1);
    const log = await taskLog(g, logId);
    expect(events[0]).toMatchObject({
      eventName: 'gen_ai.evaluation.result',
      traceId: log.trace_id,
      spanId: log.span_id,
      attributes: { 'gen_ai.evaluation.name': 'is-hello', 'gen_ai.evaluation.score.value': 1 },
    });
  });

  it("sends a guarded call's verdicts as evaluation events on its span, named after the checks", async () => {
    const policy = await g.h.call('POST', '/v1/guards', {
      body: {
        name: 'export-guards',
        checks: [
          { name: 'refunds', guard: { type: 'deny_list', terms: ['refund'] }, action: 'flag' },
          { name: 'order-ids', guard: { type: 'regex', pattern: 'ORD-[0-9]{6}' }, action: 'flag' },
        ],
      },
    });
    expect(policy.status, policy.text).toBe(201);
    const { logId } = await chat(g, 'a refund please');
    const log = await taskLog(g, logId);
    await waitFor(
      () => receiver.logs.some((l) => l.attributes['evalgate.task_log.id'] === logId),
      10_000,
      "the guard's event",
    );
    await new Promise((r) => setTimeout(r, 100));
    const events = receiver.logs.filter((l) => l.attributes['evalgate.task_log.id'] === logId);
    const byName = Object.fromEntries(events.map((e) => [e.attributes['gen_ai.evaluation.name'], e]));
    expect(Object.keys(byName).sort()).toEqual(['order-ids', 'refunds']);
    expect(byName.refunds).toMatchObject({
      eventName: 'gen_ai.evaluation.result',
      traceId: log.trace_id,
      spanId: log.span_id,
      attributes: {
        'gen_ai.evaluation.score.value': 0,
        'gen_ai.evaluation.score.label': 'flagged',
        'evalgate.guard.stage': 'input',
      },
    });
    expect(byName['order-ids']!.attributes).toMatchObject({
      'gen_ai.evaluation.score.value': 1,
      'gen_ai.evaluation.score.label': 'passed',
    });
    expect(byName.refunds!.attributes['evalgate.evaluator.id']).toBeUndefined();
    expect((await g.h.call('DELETE', `/v1/guards/${policy.body.id}`)).status).toBe(200);
  });

  it('exposes the export counters in the metrics', async () => {
    const { text } = await g.h.call('GET', '/metrics', { unchecked: true });
    expect(text).toMatch(/evalgate_otel_export_items_total\{signal="spans",outcome="exported"\} [1-9]/);
    expect(text).toMatch(/evalgate_otel_export_items_total\{signal="events",outcome="exported"\} [1-9]/);
  });
});

describe('content capture', () => {
  let receiver: Receiver;
  let g: Gateway;
  beforeAll(async () => {
    receiver = await startReceiver();
    g = await startGateway(otelEnv(receiver, { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' }));
    g.mock.set({ reply: () => ANSWER });
  });
  afterAll(async () => {
    await g?.close();
    await receiver?.close();
  });

  it('puts the messages on the span, in the ≥ 1.37 structured form, only when the operator opts in', async () => {
    await chat(g, 'What is the capital of France?');
    await waitFor(() => receiver.spans.length >= 1, 10_000, 'the span');
    const a = receiver.spans[0]!.attributes;
    expect(JSON.parse(String(a['gen_ai.system_instructions']))).toEqual([
      { type: 'text', content: 'Be brief.' },
    ]);
    expect(JSON.parse(String(a['gen_ai.input.messages']))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'What is the capital of France?' }] },
    ]);
    expect(JSON.parse(String(a['gen_ai.output.messages']))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: ANSWER }], finish_reason: 'stop' },
    ]);
  });
});
