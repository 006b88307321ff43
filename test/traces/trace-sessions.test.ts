import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SpanKind } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { logsOf, sdkProvider } from './helpers.js';

/**
 * A trace's `session_id` is its calls' session (the `sess_…` id the log writer assigned), whichever rule
 * made it, and `GET /v1/traces?session=` finds a trace by that id or by the key that named the session.
 * The model-call spans are LangChain's, as recorded through OpenInference (fixtures/spans), sent under an
 * agent span over OTLP: once with no conversation id (the trace makes the session) and once with
 * OpenInference's `session.id`, as LangChain sets it from a thread id.
 */
let h: Harness;
const here = path.dirname(fileURLToPath(import.meta.url));
const recorded = JSON.parse(
  readFileSync(path.join(here, '../fixtures/spans/langchain-openinference.json'), 'utf8'),
) as { spans: { name: string; attributes: Record<string, string | number | boolean> }[] };

beforeAll(async () => {
  h = await startHarness();
  for (const label of ['by-trace', 'by-key']) {
    expect((await h.call('POST', '/v1/containers', { body: { label } })).status).toBe(201);
  }
});
afterAll(async () => {
  await h.close();
});

/** An agent span with the recorded LangChain model calls under it; returns the trace id. */
async function sendAgent(container: string, sessionKey: string | null): Promise<string> {
  const provider = sdkProvider(h, { protocol: 'protobuf', headers: { 'x-evalgate-container': container } });
  const tracer = provider.getTracer('langchain');
  const own = sessionKey === null ? {} : { 'session.id': sessionKey };
  let traceId = '';
  await tracer.startActiveSpan('LangGraph', async (agent) => {
    agent.setAttributes({ 'openinference.span.kind': 'CHAIN', ...own });
    traceId = agent.spanContext().traceId;
    for (const s of recorded.spans) {
      const call = tracer.startSpan(s.name, { kind: SpanKind.CLIENT });
      call.setAttributes({ ...s.attributes, ...own });
      call.end();
    }
    agent.end();
  });
  await provider.forceFlush();
  await provider.shutdown();
  return traceId;
}

/** The container's one session: every call of the trace in it. */
async function sessionOf(container: string): Promise<string> {
  const logs = await logsOf(h, container);
  expect(logs).toHaveLength(recorded.spans.length);
  const ids = [...new Set(logs.map((l) => l.session_id))];
  expect(ids).toHaveLength(1);
  expect(ids[0]).toMatch(/^sess_/);
  return ids[0] as string;
}

async function listed(query: string, key?: string): Promise<string[]> {
  const res = await h.call('GET', `/v1/traces?${query}`, { key });
  expect(res.status, res.text).toBe(200);
  expect(res.body.total).toBe(res.body.data.length);
  return res.body.data.map((t: any) => t.id);
}

describe('the session of a trace', () => {
  it('is the session the trace made of its calls, in the list and the detail, and filters the list', async () => {
    const traceId = await sendAgent('by-trace', null);
    const session = await sessionOf('by-trace');
    const detail = await h.call('GET', `/v1/sessions/${session}`);
    expect(detail.body).toMatchObject({ assigned_by: 'trace', turn_count: 2 });

    const trace = await h.call('GET', `/v1/traces/${traceId}`);
    expect(trace.status, trace.text).toBe(200);
    expect(trace.body.session_id).toBe(session);
    // Each model call shows its session; the agent span, which names none, shows none.
    expect(trace.body.spans.map((s: any) => [s.name, s.session_id])).toEqual([
      ['LangGraph', null],
      ...recorded.spans.map((s) => [s.name, session]),
    ]);
    const list = await h.call('GET', '/v1/traces?container=by-trace');
    expect(list.body.data.map((t: any) => [t.id, t.session_id])).toEqual([[traceId, session]]);
    expect(await listed(`session=${session}`)).toEqual([traceId]);
  });

  it("is the session's id, not the span's conversation id, for LangChain's session.id; the key still filters", async () => {
    const traceId = await sendAgent('by-key', 'thread-7');
    const session = await sessionOf('by-key');
    const detail = await h.call('GET', `/v1/sessions/${session}`);
    expect(detail.body).toMatchObject({ assigned_by: 'header', key: 'thread-7', turn_count: 2 });

    const trace = await h.call('GET', `/v1/traces/${traceId}`);
    expect(trace.body.session_id).toBe(session);
    // The agent span named the session by its key: it shows the session that key named.
    expect(trace.body.spans.map((s: any) => s.session_id)).toEqual(
      Array(recorded.spans.length + 1).fill(session),
    );
    // Its attributes still carry the key as sent.
    expect(trace.body.spans[0].attributes['session.id']).toBe('thread-7');
    const list = await h.call('GET', '/v1/traces?container=by-key');
    expect(list.body.data.map((t: any) => t.session_id)).toEqual([session]);

    expect(await listed(`session=${session}`)).toEqual([traceId]);
    expect(await listed('session=thread-7')).toEqual([traceId]);
    expect(await listed('container=by-trace&session=thread-7')).toEqual([]);
    expect(await listed('session=thread-8')).toEqual([]);
    expect(await listed('session=sess_unknown')).toEqual([]);
  });

  it("is not found by another project's key, by id or by key", async () => {
    const other = await h.key(['*'], 'trace-sessions-other');
    const logs = await logsOf(h, 'by-key');
    expect(await listed(`session=${logs[0].session_id}`, other.key)).toEqual([]);
    expect(await listed('session=thread-7', other.key)).toEqual([]);
  });
});
