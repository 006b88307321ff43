import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OpenAIInstrumentation } from '@opentelemetry/instrumentation-openai';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { logsOf, settled } from './helpers.js';

/**
 * The official `@opentelemetry/instrumentation-openai` with message capture on: the span carries model,
 * provider and usage, and the messages travel as OTel log records (`gen_ai.user.message`,
 * `gen_ai.choice`, …) through the official SDK's LoggerProvider and OTLP/protobuf log exporter to
 * `/v1/logs`. Whichever signal reaches the server first, the call's task log ends with its input
 * messages, output and tool calls; a judge run and a monitor over the container score those calls.
 */
let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  mock = await startMockUpstream({
    reply: (req) => {
      if (req.body.model === 'judge') return { json: { score: 1, reasoning: 'fine' } };
      if (req.lastUserText.includes('weather'))
        return {
          toolCalls: [{ id: 'call_w', name: 'get_weather', arguments: { city: 'Oslo' } }],
          promptTokens: 20,
          completionTokens: 5,
        };
      return { text: `answer to ${req.lastUserText}`, promptTokens: 11, completionTokens: 2 };
    },
  });
  h = await startHarness({ env: { EVALGATE_RUN_POLL_MS: '100', EVALGATE_LOG_FLUSH_MS: '50' } });
  const model = await h.call('POST', '/v1/models', {
    body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'judge' },
  });
  expect(model.status, model.text).toBe(201);
  for (const label of ['first-logs', 'first-span']) {
    expect((await h.call('POST', '/v1/containers', { body: { label } })).status).toBe(201);
  }
  const ev = await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'rate', model: 'judge', prompt: 'Rate {{output}}', pass_threshold: 0.5 },
  });
  expect(ev.status, ev.text).toBe(201);
});
afterAll(async () => {
  await h.close();
  await mock.close();
});

/** The instrumentation wired to an SDK tracer and logger that export only when flushed (by the test). */
function instrumented(container: string, key = h.admin.key) {
  const headers = { authorization: `Bearer ${key}` };
  const resource = resourceFromAttributes({ 'service.name': 'logs-app', 'evalgate.container': container });
  const held = { scheduledDelayMillis: 3_600_000, maxExportBatchSize: 512 };
  const tracerProvider = new TracerProvider({
    resource,
    spanProcessors: [
      new BatchSpanProcessor({
        ...held,
        exporter: new OTLPTraceExporter({ url: `${h.url}/v1/traces`, headers }),
      }),
    ],
  });
  const loggerProvider = new LoggerProvider({
    resource,
    processors: [
      new BatchLogRecordProcessor({
        ...held,
        exporter: new OTLPLogExporter({ url: `${h.url}/v1/logs`, headers }),
      }),
    ],
  });
  const instrumentation = new OpenAIInstrumentation({ captureMessageContent: true });
  instrumentation.setTracerProvider(tracerProvider);
  instrumentation.setLoggerProvider(loggerProvider);
  // Patched by hand: the module is already loaded (ESM), so the require hook cannot see it.
  const [definition] = (instrumentation as unknown as { init(): { patch(m: unknown): unknown }[] }).init();
  definition!.patch({ OpenAI });
  const client = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'sk-test', maxRetries: 0 });
  return {
    client,
    tracerProvider,
    loggerProvider,
    async close() {
      instrumentation.disable();
      await tracerProvider.shutdown();
      await loggerProvider.shutdown();
    },
  };
}

async function twoCalls(client: OpenAI): Promise<void> {
  const plain = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Capital of France?' },
    ],
  });
  expect(plain.choices[0]!.message.content).toBe('answer to Capital of France?');
  const tools = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'weather in Oslo?' }],
    tools: [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ],
  });
  expect(tools.choices[0]!.message.tool_calls).toHaveLength(1);
}

function expectContent(logs: any[]): void {
  expect(logs).toHaveLength(2);
  const [plain, tools] = logs;
  expect(plain).toMatchObject({
    model: 'gpt-4o-mini',
    input: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Capital of France?' },
    ],
    output: 'answer to Capital of France?',
    usage: { prompt_tokens: 11, completion_tokens: 2 },
    metadata: { source: 'otlp', convention: 'genai', provider: 'openai', content_captured: true },
  });
  expect(plain.cost).toBeGreaterThan(0);
  expect(tools).toMatchObject({
    model: 'gpt-4o-mini',
    input: [{ role: 'user', content: 'weather in Oslo?' }],
    usage: { prompt_tokens: 20, completion_tokens: 5 },
    metadata: { content_captured: true },
  });
  expect(JSON.parse(tools.output).tool_calls).toEqual([
    { id: 'call_w', name: 'get_weather', arguments: '{"city":"Oslo"}' },
  ]);
}

describe('@opentelemetry/instrumentation-openai with message content as log records', () => {
  it('logs first, then the span: the task log is written with its messages and a monitor scores it', async () => {
    const monitor = await h.call('POST', '/v1/monitors', {
      body: { name: 'logs-watch', container: 'first-logs', evaluators: ['rate'] },
    });
    expect(monitor.status, monitor.text).toBe(201);
    const app = instrumented('first-logs');
    await twoCalls(app.client);
    await app.loggerProvider.forceFlush();
    await settled(h);
    await app.tracerProvider.forceFlush();
    await app.close();
    expectContent(await logsOf(h, 'first-logs'));

    await waitFor(
      async () => {
        const res = await h.call('GET', `/v1/monitors/${monitor.body.id}/samples?limit=100`);
        return res.body.data?.filter((s: any) => s.status === 'scored').length === 2;
      },
      30_000,
      'monitor scored both calls',
    );
    const judged = mock.requests.filter((r) => r.body.model === 'judge');
    expect(judged.some((r) => JSON.stringify(r.body).includes('answer to Capital of France?'))).toBe(true);
  });

  it('the span first, then the logs: the task log takes its messages and a judge run scores it', async () => {
    const app = instrumented('first-span');
    await twoCalls(app.client);
    await app.tracerProvider.forceFlush();
    const bare = await logsOf(h, 'first-span');
    expect(bare).toHaveLength(2);
    expect(bare[0]).toMatchObject({ output: null, metadata: { content_captured: false } });
    await app.loggerProvider.forceFlush();
    await settled(h);
    const logs = await logsOf(h, 'first-span');
    expectContent(logs);

    // The trace view says the content is there.
    const list = await h.call('GET', '/v1/traces?container=first-span');
    expect(list.status, list.text).toBe(200);
    const calls: any[] = [];
    for (const t of list.body.data) {
      const trace = await h.call('GET', `/v1/traces/${t.id}`);
      expect(trace.status, trace.text).toBe(200);
      calls.push(...trace.body.spans.filter((s: any) => s.model_call).map((s: any) => s.model_call));
    }
    expect(calls.find((c) => c.task_log_id === logs[0].id)).toMatchObject({ content_captured: true });
    await app.close();

    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'first-span',
        evaluators: ['rate'],
        sample: { type: 'container', container: 'first-span' },
      },
    });
    expect(created.status, created.text).toBe(201);
    let run: any;
    await waitFor(
      async () => {
        run = (await h.call('GET', `/v1/evaluation/runs/${created.body.id}`)).body;
        return ['completed', 'error', 'cancelled'].includes(run.status);
      },
      30_000,
      'run ended',
    );
    expect(run.status).toBe('completed');
    const samples = await h.call('GET', `/v1/evaluation/runs/${created.body.id}/samples?limit=100`);
    expect(samples.body.data.map((s: any) => s.status)).toEqual(['scored', 'scored']);
  });
});
