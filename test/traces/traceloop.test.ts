import * as traceloop from '@traceloop/node-server-sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { logsOf } from './helpers.js';

/**
 * OpenLLMetry (`@traceloop/node-server-sdk`) on an `openai` client that calls a mock provider directly,
 * exporting with its own OTLP/protobuf exporter to a live server: `baseUrl` is the server (the SDK appends
 * `/v1/traces`), the key goes in `headers` (which replace its default Authorization header), and the
 * already-imported module is handed over in `instrumentModules`. `disableBatch` exports each span as it
 * ends. The calls become task logs with the right content, and a judge run and a monitor score them.
 */
type TraceloopOpenAI = NonNullable<
  NonNullable<Parameters<typeof traceloop.initialize>[0]>['instrumentModules']
>['openAI'];

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
      return { text: `answer to ${req.lastUserText}`, promptTokens: 9, completionTokens: 3 };
    },
  });
  h = await startHarness({ env: { EVALGATE_RUN_POLL_MS: '100', EVALGATE_LOG_FLUSH_MS: '50' } });
  const model = await h.call('POST', '/v1/models', {
    body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'judge' },
  });
  expect(model.status, model.text).toBe(201);
  expect((await h.call('POST', '/v1/containers', { body: { label: 'tl' } })).status).toBe(201);
  const ev = await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'rate', model: 'judge', prompt: 'Rate {{output}}', pass_threshold: 0.5 },
  });
  expect(ev.status, ev.text).toBe(201);
  const monitor = await h.call('POST', '/v1/monitors', {
    body: { name: 'tl-watch', container: 'tl', evaluators: ['rate'] },
  });
  expect(monitor.status, monitor.text).toBe(201);
  traceloop.initialize({
    appName: 'traceloop-app',
    baseUrl: h.url,
    headers: { authorization: `Bearer ${h.admin.key}`, 'x-evalgate-container': 'tl' },
    disableBatch: true,
    // The SDK's types name openai's CommonJS declarations; this test imports the ES module's.
    instrumentModules: { openAI: OpenAI as unknown as TraceloopOpenAI },
    silenceInitializationMessage: true,
    traceloopSyncEnabled: false,
  });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

describe('@traceloop/node-server-sdk (OpenLLMetry)', () => {
  it('records each call with model, input messages, output, tool calls and tokens', async () => {
    const client = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'sk-test', maxRetries: 0 });
    await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'two plus two' },
      ],
    });
    await client.chat.completions.create({
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
    await traceloop.forceFlush();

    let logs: any[] = [];
    await waitFor(
      async () => {
        logs = await logsOf(h, 'tl');
        return logs.length >= 2;
      },
      15_000,
      'two task logs',
    );
    expect(logs).toHaveLength(2);
    const [plain, tools] = logs;
    expect(plain).toMatchObject({
      model: expect.stringContaining('gpt-4o-mini'),
      input: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'two plus two' },
      ],
      output: 'answer to two plus two',
      usage: { prompt_tokens: 9, completion_tokens: 3 },
      metadata: { source: 'otlp', content_captured: true },
    });
    expect(plain.cost).toBeGreaterThan(0);
    expect(tools).toMatchObject({
      input: [{ role: 'user', content: 'weather in Oslo?' }],
      usage: { prompt_tokens: 20, completion_tokens: 5 },
    });
    expect(JSON.parse(tools.output).tool_calls).toEqual([
      { id: 'call_w', name: 'get_weather', arguments: '{"city":"Oslo"}' },
    ]);
  });

  it('a judge run and a monitor over the container score the ingested calls', async () => {
    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'tl', evaluators: ['rate'], sample: { type: 'container', container: 'tl' } },
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
    const monitors = await h.call('GET', '/v1/monitors');
    const id = monitors.body.data.find((m: any) => m.name === 'tl-watch').id;
    await waitFor(
      async () => {
        const res = await h.call('GET', `/v1/monitors/${id}/samples?limit=100`);
        return res.body.data?.filter((s: any) => s.status === 'scored').length === 2;
      },
      30_000,
      'monitor scored both calls',
    );
  });
});
