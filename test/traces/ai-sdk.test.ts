import { createOpenAI } from '@ai-sdk/openai';
import { OpenTelemetry } from '@ai-sdk/otel';
import { generateText, jsonSchema, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { logsOf, sdkProvider } from './helpers.js';

/**
 * AI SDK 7 with `@ai-sdk/otel`'s telemetry integration (spans through the OpenTelemetry SDK's JSON
 * exporter) around an OpenAI provider calling a mock provider directly: the `chat` spans (GenAI
 * conventions) are the model calls, recorded with their messages, output, tool calls and tokens; the
 * `invoke_agent` span, the steps and the tool executions are kept in the trace.
 */
let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  mock = await startMockUpstream({
    reply: (req) =>
      req.body.messages.some((m: { role: string }) => m.role === 'tool')
        ? { text: 'It is sunny in Oslo.', promptTokens: 30, completionTokens: 6 }
        : { toolCalls: [{ id: 'call_a', name: 'weather', arguments: { city: 'Oslo' } }], promptTokens: 20 },
  });
  h = await startHarness();
  expect((await h.call('POST', '/v1/containers', { body: { label: 'aisdk' } })).status).toBe(201);
});
afterAll(async () => {
  await h.close();
  await mock.close();
});

describe('AI SDK 7 telemetry with @ai-sdk/otel', () => {
  it('records each provider call of a tool loop as a task log', async () => {
    const provider = sdkProvider(h, { protocol: 'json', resource: { 'evalgate.container': 'aisdk' } });
    const openai = createOpenAI({ baseURL: mock.baseUrl, apiKey: 'sk-test' });
    const result = await generateText({
      model: openai.chat('gpt-4o-mini'),
      system: 'Answer briefly.',
      prompt: 'Weather in Oslo?',
      tools: {
        weather: tool({
          description: 'Weather of a city',
          inputSchema: jsonSchema<{ city: string }>({
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
          }),
          execute: async ({ city }) => `sunny in ${city}`,
        }),
      },
      stopWhen: ({ steps }) => steps.length >= 2,
      // The session's name, put on every span as the standard's conversation id (as docs/traces.md shows).
      runtimeContext: { sessionId: 'weather-chat-1' },
      telemetry: {
        includeRuntimeContext: { sessionId: true },
        integrations: new OpenTelemetry({
          tracer: provider.getTracer('ai'),
          enrichSpan: ({ runtimeContext }) =>
            typeof runtimeContext?.sessionId === 'string'
              ? { 'gen_ai.conversation.id': runtimeContext.sessionId }
              : undefined,
        }),
      },
    });
    expect(result.text).toBe('It is sunny in Oslo.');
    await provider.forceFlush();
    await provider.shutdown();

    const logs = await logsOf(h, 'aisdk');
    expect(logs).toHaveLength(2);
    const [first, second] = logs;
    expect(first).toMatchObject({
      model: 'gpt-4o-mini',
      input: [
        { role: 'system', content: 'Answer briefly.' },
        { role: 'user', content: 'Weather in Oslo?' },
      ],
      usage: { prompt_tokens: 20 },
      metadata: { source: 'otlp', convention: 'genai', content_captured: true },
    });
    expect(JSON.parse(first.output).tool_calls).toEqual([
      { id: 'call_a', name: 'weather', arguments: '{"city":"Oslo"}' },
    ]);
    expect(second).toMatchObject({
      output: 'It is sunny in Oslo.',
      usage: { prompt_tokens: 30, completion_tokens: 6 },
    });
    expect(second.input.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_a' });
    // The conversation id names one session of both calls.
    expect(new Set(logs.map((l) => l.session_id)).size).toBe(1);
    expect(first.session_id).toMatch(/^sess_/);
    const sessions = await h.call('GET', '/v1/sessions?container=aisdk');
    expect(sessions.body.data.map((s: any) => [s.key, s.turn_count])).toEqual([['weather-chat-1', 2]]);
    // The agent's span, its steps and the tool execution are in the trace too, not task logs.
    const traces = await h.call('GET', '/v1/traces?container=aisdk');
    expect(traces.body.total).toBe(1);
    const trace = await h.call('GET', `/v1/traces/${traces.body.data[0].id}`);
    expect(trace.body.spans[0]).toMatchObject({
      name: 'invoke_agent gpt-4o-mini',
      depth: 0,
      model_call: null,
    });
    expect(trace.body.spans.map((s: any) => s.name)).toContain('execute_tool weather');
    expect(trace.body.totals.model_call_count).toBe(2);
  });
});
