// Database-independent: the provider layer against a loopback upstream, no store.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { assembleCompletion } from '../../src/llm/assemble.js';
import type { ProviderLayer } from '../../src/llm/provider-layer.js';
import { completionText } from '../../src/llm/providers/openai-compatible.js';
import { ssePayloads } from '../../src/llm/sse.js';
import { ApiError } from '../../src/shared/errors.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { drain, layerFor, modelAt } from './layer-helpers.js';

let mock: MockUpstream;
let layer: ProviderLayer;
let claude: ReturnType<typeof modelAt>;

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const scoreSchema = {
  type: 'json_schema',
  json_schema: {
    name: 'verdict',
    schema: { type: 'object', properties: { score: { type: 'number' } }, required: ['score'] },
  },
};

beforeAll(async () => {
  mock = await startMockUpstream();
  layer = layerFor();
  claude = modelAt(mock.baseUrl, {
    slug: 'anthropic/claude-mock',
    provider: 'anthropic',
    upstreamModel: 'claude-mock',
  });
});
afterAll(async () => {
  await layer.close();
  await mock.close();
});
beforeEach(() => {
  mock.reset();
  mock.set({ reply: () => 'Hello from the mock upstream.' });
});

describe('anthropic adapter', () => {
  it('translates the request: system, tools, tool results, images, stop, max_tokens, headers', async () => {
    await layer.complete(claude, {
      model: 'x',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'developer', content: 'Answer in English.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather in Paris? ' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
      tools: [weatherTool],
      tool_choice: 'required',
      stop: 'END',
      temperature: 0.2,
    });
    const { body, headers } = mock.requests[0]!;
    expect(mock.requests[0]!.path).toBe('/v1/messages');
    expect(headers['x-api-key']).toBe('sk-test');
    expect(headers['anthropic-version']).toBe('2023-06-01');
    expect(body).toMatchObject({
      model: 'claude-mock',
      system: 'You are terse.\n\nAnswer in English.',
      max_tokens: 4096,
      stop_sequences: ['END'],
      temperature: 0.2,
      tool_choice: { type: 'any' },
      tools: [
        {
          name: 'get_weather',
          description: 'Weather of a city',
          input_schema: weatherTool.function.parameters,
        },
      ],
    });
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Weather in Paris? ' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
        ],
      },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' }] },
    ]);
  });

  it('translates the response: text, usage, finish reason', async () => {
    const result = await layer.complete(claude, {
      model: 'x',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 50,
    });
    expect(mock.requests[0]!.body.max_tokens).toBe(50);
    expect(result.body).toMatchObject({
      object: 'chat.completion',
      model: 'claude-mock',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello from the mock upstream.' },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
    });
    expect(result.text).toBe('Hello from the mock upstream.');
  });

  it('translates tool calls, streamed and not', async () => {
    mock.set({
      reply: () => ({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' }, id: 'toolu_9' }] }),
    });
    const ask = { model: 'x', messages: [{ role: 'user', content: 'Oslo?' }], tools: [weatherTool] };
    const result = await layer.complete(claude, ask);
    expect(result.body).toMatchObject({
      choices: [
        {
          message: {
            content: null,
            tool_calls: [
              {
                id: 'toolu_9',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
              },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
    });
    const stream = await layer.stream(claude, { ...ask, stream: true }, { collect: true });
    const { chunks, done } = await drain(stream);
    expect(done).toBe(true);
    expect(chunks[1].choices[0].delta.tool_calls[0]).toMatchObject({
      index: 0,
      id: 'toolu_9',
      function: { name: 'get_weather' },
    });
    expect(assembleCompletion(ssePayloads(stream.result().sse), 'x').choices[0]).toMatchObject({
      message: { tool_calls: [{ function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      finish_reason: 'tool_calls',
    });
  });

  it('serves a json_schema response format through a forced tool', async () => {
    mock.set({ reply: () => ({ json: { score: 0.75 } }) });
    const ask = {
      model: 'x',
      messages: [{ role: 'user', content: 'Score it' }],
      response_format: scoreSchema,
    };
    const result = await layer.complete(claude, ask);
    const sent = mock.requests[0]!.body;
    expect(sent.tool_choice).toEqual({ type: 'tool', name: 'verdict' });
    expect(sent.tools[0]).toMatchObject({ name: 'verdict', input_schema: scoreSchema.json_schema.schema });
    expect(JSON.parse(result.text)).toEqual({ score: 0.75 });
    expect(result.body).toMatchObject({ choices: [{ finish_reason: 'stop' }] });

    const stream = await layer.stream(claude, { ...ask, stream: true }, { collect: true });
    await drain(stream);
    expect(JSON.parse(completionText(assembleCompletion(ssePayloads(stream.result().sse), 'x')))).toEqual({
      score: 0.75,
    });
  });

  it('streams text as chunks with the usage chunk when asked', async () => {
    const stream = await layer.stream(
      claude,
      {
        model: 'x',
        messages: [{ role: 'user', content: 'Hi' }],
        stream: true,
        stream_options: { include_usage: true },
      },
      { collect: true },
    );
    const { chunks, done } = await drain(stream);
    expect(done).toBe(true);
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe(
      'Hello from the mock upstream.',
    );
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 7 } });
    expect(stream.result().usage?.total_tokens).toBe(19);
  });

  it('maps errors: the upstream message, overloaded retried, unsupported parameters refused', async () => {
    mock.fail({ status: 400, message: 'messages: roles must alternate' });
    const bad = await layer
      .complete(claude, { model: 'x', messages: [{ role: 'user', content: 'Hi' }] })
      .catch((e) => e);
    expect(bad).toBeInstanceOf(ApiError);
    expect(bad.message).toBe('messages: roles must alternate');
    mock.fail({ status: 529, message: 'Overloaded' });
    const ok = await layer.complete(claude, { model: 'x', messages: [{ role: 'user', content: 'Hi' }] });
    expect(ok.attempts).toBe(2);
    const many = await layer
      .complete(claude, { model: 'x', messages: [{ role: 'user', content: 'Hi' }], n: 2 })
      .catch((e) => e);
    expect(many.code).toBe('bad_request');
  });
});
