import { OpenAIInstrumentation } from '@opentelemetry/instrumentation-openai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { logsOf, sdkProvider } from './helpers.js';

/**
 * The official `@opentelemetry/instrumentation-openai` on an `openai` client calling a mock provider
 * directly. It puts model, provider and usage on the span and the messages in log records (the logs
 * signal), not on the span: the trace alone carries no content, so the task log says
 * `content_captured: false` and a run counts it as missing with that reason instead of judging it.
 */
let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  mock = await startMockUpstream({
    reply: (req) =>
      req.body.model === 'judge'
        ? { json: { score: 1, reasoning: 'fine' } }
        : { text: 'Paris.', promptTokens: 11, completionTokens: 2 },
  });
  h = await startHarness({ env: { EVALGATE_RUN_POLL_MS: '100' } });
  const model = await h.call('POST', '/v1/models', {
    body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'judge' },
  });
  expect(model.status, model.text).toBe(201);
  expect((await h.call('POST', '/v1/containers', { body: { label: 'otel' } })).status).toBe(201);
  const ev = await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'rate', model: 'judge', prompt: 'Rate {{output}}' },
  });
  expect(ev.status, ev.text).toBe(201);
});
afterAll(async () => {
  await h.close();
  await mock.close();
});

describe('@opentelemetry/instrumentation-openai', () => {
  it('records the call (model, provider, tokens, cost) as a task log without content, never judged', async () => {
    const provider = sdkProvider(h, { protocol: 'protobuf', resource: { 'evalgate.container': 'otel' } });
    const instrumentation = new OpenAIInstrumentation({ captureMessageContent: true });
    instrumentation.setTracerProvider(provider);
    // Patched by hand: the module is already loaded (ESM), so the require hook cannot see it.
    const [definition] = (instrumentation as unknown as { init(): { patch(m: unknown): unknown }[] }).init();
    definition!.patch({ OpenAI });
    const client = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'sk-test', maxRetries: 0 });
    const answer = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Capital of France?' }],
    });
    expect(answer.choices[0]!.message.content).toBe('Paris.');
    await provider.forceFlush();
    instrumentation.disable();
    await provider.shutdown();

    const [log] = await logsOf(h, 'otel');
    expect(log).toMatchObject({
      model: 'gpt-4o-mini',
      output: null,
      usage: { prompt_tokens: 11, completion_tokens: 2 },
      metadata: { source: 'otlp', convention: 'genai', provider: 'openai', content_captured: false },
    });
    expect(log.cost).toBeGreaterThan(0);

    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'otel', evaluators: ['rate'], sample: { type: 'container', container: 'otel' } },
    });
    expect(created.status, created.text).toBe(201);
    await waitFor(
      async () =>
        ['completed', 'error'].includes(
          (await h.call('GET', `/v1/evaluation/runs/${created.body.id}`)).body.status,
        ),
      30_000,
      'run ended',
    );
    const samples = await h.call('GET', `/v1/evaluation/runs/${created.body.id}/samples?limit=10`);
    expect(samples.body.data).toHaveLength(1);
    expect(samples.body.data[0]).toMatchObject({ status: 'missing' });
    expect(samples.body.data[0].missing_reason).toMatch(/content_captured: false/);
    // The judge was never asked.
    expect(mock.requests.filter((r) => r.body.model === 'judge')).toHaveLength(0);
  });
});
