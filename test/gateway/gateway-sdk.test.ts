import OpenAI, { type APIError, NotFoundError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from './gateway-helpers.js';

let g: Gateway;
beforeAll(async () => {
  g = await startGateway();
});
afterAll(async () => {
  await g.close();
});
beforeEach(() => {
  g.mock.reset();
  g.mock.set({ reply: () => 'Hello from the mock upstream.' });
});

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

async function logById(id: string, container = 'default'): Promise<any> {
  const found = (await g.logs(container)).find((l) => l.id === id);
  if (!found) throw new Error(`log ${id} not found in ${container}`);
  return found;
}

describe.each([
  ['openai', 'openai/gpt-4o-mini', '/v1/chat/completions'],
  ['anthropic', 'anthropic/claude-haiku-4-5', '/v1/messages'],
])('through the official openai client, %s upstream', (_provider, model, upstreamPath) => {
  it('answers a plain completion with usage, cost and a recorded task log', async () => {
    const { data, response } = await g
      .client()
      .chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }] })
      .withResponse();
    expect(g.mock.requests[0]!.path).toBe(upstreamPath);
    expect(data.choices[0]!.message.content).toBe('Hello from the mock upstream.');
    expect(data.choices[0]!.finish_reason).toBe('stop');
    expect(data.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 });
    const cost = Number(response.headers.get('x-evalgate-cost'));
    expect(cost).toBeGreaterThan(0);
    const logId = response.headers.get('x-evalgate-log-id')!;
    expect(logId).toMatch(/^log_/);
    const log = await logById(logId);
    expect(log).toMatchObject({
      model,
      status: 'success',
      output: 'Hello from the mock upstream.',
      input: [{ role: 'user', content: 'Hi' }],
      usage: { prompt_tokens: 12, completion_tokens: 7 },
    });
    expect(log.cost).toBeCloseTo(cost, 12);
    expect(log.latency_ms).toBeGreaterThan(0);
  });

  it('streams chunk by chunk with usage at the end when asked, and records the assembled answer', async () => {
    const { data: stream, response } = await g
      .client()
      .chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'Hi' }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const logId = response.headers.get('x-evalgate-log-id')!;
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBeGreaterThan(3);
    expect(text).toBe('Hello from the mock upstream.');
    expect(usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 });
    const log = await logById(logId);
    expect(log).toMatchObject({ status: 'success', output: text, usage: { total_tokens: 19 } });
    expect(log.metadata).toMatchObject({ stream: true });
    expect(log.cost).toBeGreaterThan(0);
  });

  it('sends no usage chunk to a client that did not ask, yet still records usage', async () => {
    const { data: stream, response } = await g
      .client()
      .chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], stream: true })
      .withResponse();
    const seen: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) seen.push(chunk);
    expect(seen.some((c) => c.choices.length === 0)).toBe(false);
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    expect(log.usage).toMatchObject({ total_tokens: 19 });
  });

  it('passes tools and returns tool calls, streamed and not', async () => {
    g.mock.set({ reply: () => ({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }) });
    const ask = {
      model,
      messages: [{ role: 'user' as const, content: 'Weather in Oslo?' }],
      tools: [weatherTool],
    };
    const { data: plain, response } = await g.client().chat.completions.create(ask).withResponse();
    const call = plain.choices[0]!.message.tool_calls![0]!;
    // Recorded with its calls (not an empty output), so that a judge has something to score.
    const recorded = JSON.parse((await logById(response.headers.get('x-evalgate-log-id')!)).output);
    expect(recorded).toEqual({
      content: null,
      tool_calls: [{ id: call.id, name: 'get_weather', arguments: '{"city":"Oslo"}' }],
    });
    expect(plain.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call.type === 'function' && call.function.name).toBe('get_weather');
    expect(call.type === 'function' && JSON.parse(call.function.arguments)).toEqual({ city: 'Oslo' });

    const stream = await g.client().chat.completions.create({ ...ask, stream: true });
    let args = '';
    let name = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta?.tool_calls?.[0];
      name += delta?.function?.name ?? '';
      args += delta?.function?.arguments ?? '';
    }
    expect(name).toBe('get_weather');
    expect(JSON.parse(args)).toEqual({ city: 'Oslo' });
    const streamedLog = (await g.logs('default')).at(-1);
    expect(JSON.parse(streamedLog.output).tool_calls[0]).toMatchObject({ name: 'get_weather' });
  });

  it("keeps the request's metadata and the X-Evalgate-Metadata header on the task log", async () => {
    const { response } = await g
      .client({ headers: { 'X-Evalgate-Metadata': '{"experiment":"b","ticket":"from-header"}' } })
      .chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'Hi' }],
        metadata: { ticket: 'T-9' },
      })
      .withResponse();
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    // The request's field wins over the header; the gateway's own keys stay.
    expect(log.metadata).toMatchObject({ experiment: 'b', ticket: 'T-9', route: 'chat', stream: false });
    const bad = await g.h.call('POST', '/v1/chat/completions', {
      headers: { 'X-Evalgate-Metadata': 'not json' },
      body: { model, messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('X-Evalgate-Metadata');
  });

  it('answers a json_schema response format', async () => {
    g.mock.set({ reply: () => ({ json: { score: 4, reasoning: 'fine' } }) });
    const answer = await g.client().chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Rate it' }],
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'verdict',
          schema: {
            type: 'object',
            properties: { score: { type: 'number' }, reasoning: { type: 'string' } },
            required: ['score', 'reasoning'],
          },
        },
      },
    });
    expect(JSON.parse(answer.choices[0]!.message.content!)).toEqual({ score: 4, reasoning: 'fine' });
  });

  it('returns upstream 4xx in the envelope with the upstream message, and records the failure', async () => {
    g.mock.fail({ status: 400, message: 'temperature is out of range' });
    const err = await g
      .client()
      .chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], temperature: 5 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const bad = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(bad.status).toBe(400);
    expect(bad.message).toContain('temperature is out of range');
    expect(bad.code).toBe('bad_request');
    const logId = bad.headers?.get('x-evalgate-log-id');
    const log = await logById(logId!);
    expect(log).toMatchObject({ status: 'error', error: { code: 'bad_request' }, output: null });
  });
});

describe('gateway routing and recording', () => {
  it('records into the container named by X-Evalgate-Container, and 404s an unknown one', async () => {
    const created = await g.h.call('POST', '/v1/containers', { body: { label: 'support-bot' } });
    const client = g.client({ headers: { 'X-Evalgate-Container': 'support-bot' } });
    const { response } = await client.chat.completions
      .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] })
      .withResponse();
    const log = await logById(response.headers.get('x-evalgate-log-id')!, created.body.id);
    expect(log.container_id).toBe(created.body.id);

    const unknown = await g.h.call('POST', '/v1/chat/completions', {
      headers: { 'X-Evalgate-Container': 'nope' },
      body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    // The message says how to fix it: the command that creates the container.
    expect(unknown.body.error.message).toContain('evalgate containers create nope');
    expect(g.mock.stats.requests).toBe(1);
    // The official SDK raises it as NotFoundError with that message.
    const missing = g.client({ headers: { 'X-Evalgate-Container': 'nope' } });
    const raised = await missing.chat.completions
      .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] })
      .catch((e: unknown) => e);
    expect(raised).toBeInstanceOf(NotFoundError);
    expect((raised as NotFoundError).message).toContain('evalgate containers create nope');
  });

  it('serves a registered model at its own base URL and prices', async () => {
    const registered = await g.h.call('POST', '/v1/models', {
      body: {
        label: 'my-vllm',
        provider: 'openai-compatible',
        base_url: g.mock.baseUrl,
        upstream_model: 'llama-mock',
        api_key: 'sk-customer',
        input_price_per_mtok: 1,
        output_price_per_mtok: 2,
      },
    });
    expect(registered.status).toBe(201);
    const { data, response } = await g
      .client()
      .chat.completions.create({ model: 'my-vllm', messages: [{ role: 'user', content: 'Hi' }] })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe('Hello from the mock upstream.');
    // The answer names the model as it was called, not by the upstream's name.
    expect(data.model).toBe('my-vllm');
    expect(g.mock.requests[0]!.body.model).toBe('llama-mock');
    expect(g.mock.requests[0]!.headers.authorization).toBe('Bearer sk-customer');
    expect(response.headers.get('x-evalgate-cost')).toBe(String((12 * 1 + 7 * 2) / 1e6));
  });

  it("streams a registered model's chunks under the caller's name (chat, Responses, Messages), the upstream's in a header", async () => {
    const registered = await g.h.call('POST', '/v1/models', {
      body: { label: 'streamed-vllm', base_url: g.mock.baseUrl, upstream_model: 'llama-streamed' },
    });
    expect(registered.status).toBe(201);
    const { data: stream, response } = await g
      .client()
      .chat.completions.create({
        model: 'streamed-vllm',
        messages: [{ role: 'user', content: 'Hi' }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    expect(response.headers.get('x-evalgate-upstream-model')).toBe('llama-streamed');
    const names = new Set<string>();
    let text = '';
    for await (const chunk of stream) {
      names.add(chunk.model);
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(g.mock.requests[0]!.body.model).toBe('llama-streamed');
    expect(text).toBe('Hello from the mock upstream.');
    expect([...names]).toEqual(['streamed-vllm']);
    // The recorded answer is what the client was sent.
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    const recorded = typeof log.response === 'string' ? JSON.parse(log.response) : log.response;
    expect(recorded.model).toBe('streamed-vllm');

    const responses = await g
      .client()
      .responses.create({ model: 'streamed-vllm', input: 'Hi', stream: true });
    const responseModels = new Set<string>();
    for await (const event of responses) {
      if ('response' in event) responseModels.add(event.response.model);
    }
    expect([...responseModels]).toEqual(['streamed-vllm']);

    const messages = await fetch(`${g.h.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': g.h.admin.key,
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify({
        model: 'streamed-vllm',
        max_tokens: 50,
        stream: true,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    });
    expect(messages.status).toBe(200);
    const events = await messages.text();
    const start = events
      .split('\n')
      .find((line) => line.startsWith('data:') && line.includes('message_start'));
    expect(JSON.parse(start!.slice(5)).message.model).toBe('streamed-vllm');
    expect(events).not.toContain('llama-streamed');
  });

  it('answers 404 model_not_found, 400 (every problem shown by the SDK) for a malformed body and 403 without inference:write', async () => {
    const missing = await g
      .client()
      .chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'Hi' }] })
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect((missing as APIError).code).toBe('model_not_found');

    const invalid = await g.h.call('POST', '/v1/chat/completions', { body: { model: 'openai/gpt-4o-mini' } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.code).toBe('bad_request');
    expect(invalid.body.error.details.issues[0].loc).toEqual(['body', 'messages']);
    const shown = await g
      .client()
      .chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [], stream_options: 'all' as never })
      .catch((e: unknown) => e);
    expect(shown).toBeInstanceOf(OpenAI.BadRequestError);
    // Both problems are in the message the SDK shows.
    expect((shown as APIError).message).toMatch(
      /body\.messages: .*body\.stream_options|body\.stream_options: .*body\.messages/,
    );

    const reader = await g.h.key(['models:read']);
    const denied = await g.h.call('POST', '/v1/chat/completions', {
      key: reader.key,
      body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(denied.status).toBe(403);
    expect(g.mock.stats.requests).toBe(0);
  });

  it('passes unknown fields through to OpenAI-compatible upstreams', async () => {
    await g.h.call('POST', '/v1/chat/completions', {
      body: {
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: 'Hi', name: 'ann' }],
        seed: 3,
        logit_bias: { '50256': -100 },
        vendor_extension: { top_k: 5 },
      },
    });
    expect(g.mock.requests[0]!.body).toMatchObject({
      model: 'gpt-4o-mini',
      seed: 3,
      logit_bias: { '50256': -100 },
      vendor_extension: { top_k: 5 },
      messages: [{ role: 'user', content: 'Hi', name: 'ann' }],
    });
  });
});
