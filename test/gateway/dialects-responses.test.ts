// Database-independent: the Responses dialect's translation in both directions; recording goes through the same log writer that test/capture runs on both databases.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mockEmbedding } from '../fixtures/mock-dialects.js';
import { type Gateway, startGateway } from './gateway-helpers.js';

/*
 * The Responses API and embeddings through the official openai client, against a registered model whose
 * upstream speaks only chat completions (translated both ways) and one that speaks Responses natively.
 */

let g: Gateway;
beforeAll(async () => {
  g = await startGateway();
  for (const [label, api] of [
    ['chat-only', 'chat'],
    ['native', 'responses'],
  ] as const) {
    const res = await g.h.call('POST', '/v1/models', {
      body: {
        label,
        base_url: g.mock.baseUrl,
        upstream_model: `${label}-upstream`,
        api,
        input_price_per_mtok: 2,
        output_price_per_mtok: 10,
      },
    });
    expect(res.status).toBe(201);
  }
});
afterAll(async () => {
  await g.close();
});
beforeEach(() => {
  g.mock.reset();
  g.mock.set({ reply: () => 'Hello from the mock upstream.', responses: true });
});

async function logById(id: string, container = 'default'): Promise<any> {
  const found = (await g.logs(container)).find((l) => l.id === id);
  if (!found) throw new Error(`log ${id} not found in ${container}`);
  return found;
}

const weather = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: true,
};

const COST = (12 * 2 + 7 * 10) / 1e6;

describe.each([
  ['chat-only', '/v1/chat/completions'],
  ['native', '/v1/responses'],
])('responses to a %s upstream', (model, upstreamPath) => {
  beforeEach(() => {
    // A chat-only upstream has no Responses API at all.
    g.mock.set({ responses: model === 'native' });
  });

  it('answers a plain response with usage, the model asked for, and a task log with cost and metadata', async () => {
    const { data, response } = await g
      .client({ headers: { 'X-Evalgate-Metadata': '{"team":"search"}' } })
      .responses.create({ model, input: 'Hi', instructions: 'Be brief.', metadata: { ticket: 'T-1' } })
      .withResponse();
    expect(g.mock.requests).toHaveLength(1);
    expect(g.mock.requests[0]!.path).toBe(upstreamPath);
    expect(g.mock.requests[0]!.body.model).toBe(`${model}-upstream`);
    expect(data.object).toBe('response');
    expect(data.id).toMatch(/^resp_/);
    expect(data.model).toBe(model);
    expect(response.headers.get('x-evalgate-upstream-model')).toBe(`${model}-upstream`);
    expect(data.output_text).toBe('Hello from the mock upstream.');
    expect(data.status).toBe('completed');
    expect(data.usage).toMatchObject({ input_tokens: 12, output_tokens: 7, total_tokens: 19 });
    expect(Number(response.headers.get('x-evalgate-cost'))).toBeCloseTo(COST, 12);
    if (model === 'chat-only') {
      expect(g.mock.requests[0]!.body.messages).toEqual([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ]);
    } else {
      expect(g.mock.requests[0]!.body).toMatchObject({ input: 'Hi', instructions: 'Be brief.' });
    }
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    expect(log.id.slice(4)).toBe(data.id.slice(5));
    expect(log).toMatchObject({
      model,
      status: 'success',
      output: 'Hello from the mock upstream.',
      input: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      usage: { prompt_tokens: 12, completion_tokens: 7 },
      metadata: { route: 'responses', ticket: 'T-1', team: 'search', stream: false },
    });
    expect(log.cost).toBeCloseTo(COST, 12);
  });

  it('streams the Responses event sequence and records the assembled answer', async () => {
    const { data: stream, response } = await g
      .client()
      .responses.create({ model, input: 'Hi', stream: true })
      .withResponse();
    const types: string[] = [];
    let text = '';
    let completed: OpenAI.Responses.Response | null = null;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(types[0]).toBe('response.created');
    expect(types).toContain('response.output_text.delta');
    expect(types.at(-1)).toBe('response.completed');
    expect(text).toBe('Hello from the mock upstream.');
    expect(completed!.model).toBe(model);
    expect(completed!.usage).toMatchObject({ input_tokens: 12, output_tokens: 7 });
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    expect(log).toMatchObject({
      status: 'success',
      output: 'Hello from the mock upstream.',
      usage: { prompt_tokens: 12, completion_tokens: 7 },
      metadata: { route: 'responses', stream: true },
    });
    expect(log.cost).toBeCloseTo(COST, 12);
  });

  it('retrieves, lists the input items of, continues and deletes a stored response', async () => {
    const client = g.client();
    const first = await client.responses.create({
      model,
      input: 'My name is Ada.',
      instructions: 'Be brief.',
    });
    const again = await client.responses.retrieve(first.id);
    expect(again).toMatchObject({ id: first.id, model, status: 'completed', instructions: 'Be brief.' });
    expect(again.output_text).toBe('Hello from the mock upstream.');
    const items = await client.responses.inputItems.list(first.id);
    expect(items.data).toHaveLength(1);
    expect(items.data[0]).toMatchObject({ type: 'message', role: 'user' });

    g.mock.reset();
    const second = await client.responses.create({
      model,
      input: 'What is my name?',
      previous_response_id: first.id,
    });
    expect(second.previous_response_id).toBe(first.id);
    const sent = g.mock.requests[0]!.body;
    if (model === 'chat-only') {
      // The earlier turn (not its instructions) comes first.
      expect(sent.messages).toEqual([
        { role: 'user', content: 'My name is Ada.' },
        { role: 'assistant', content: 'Hello from the mock upstream.' },
        { role: 'user', content: 'What is my name?' },
      ]);
    } else {
      expect(sent.previous_response_id).toBeUndefined();
      expect(sent.input).toEqual([
        { role: 'user', content: 'My name is Ada.' },
        { role: 'assistant', content: 'Hello from the mock upstream.' },
        { role: 'user', content: 'What is my name?' },
      ]);
    }

    const deleted = await g.h.call('DELETE', `/v1/responses/${first.id}`);
    expect(deleted.body).toEqual({ id: first.id, object: 'response', deleted: true });
    await expect(client.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('calls function tools and takes their outputs back', async () => {
    g.mock.set({
      reply: () => ({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' }, id: 'call_1' }] }),
    });
    const client = g.client();
    const { data: first, response } = await client.responses
      .create({ model, input: 'Weather in Paris?', tools: [weather] })
      .withResponse();
    const call = first.output.find((o) => o.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', call_id: 'call_1' });
    expect(JSON.parse((call as OpenAI.Responses.ResponseFunctionToolCall).arguments)).toEqual({
      city: 'Paris',
    });
    const sent = g.mock.requests[0]!.body;
    if (model === 'chat-only')
      expect(sent.tools[0].function).toMatchObject({ name: 'get_weather', strict: true });
    else expect(sent.tools[0]).toMatchObject({ type: 'function', name: 'get_weather' });
    // A tool-call answer is recorded with its calls, not as an empty output.
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    expect(JSON.parse(log.output)).toEqual({
      content: null,
      tool_calls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
    });

    g.mock.reset();
    g.mock.set({ reply: () => 'It is sunny in Paris.' });
    const second = await client.responses.create({
      model,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: 'call_1', output: '{"sky":"clear"}' }],
      tools: [weather],
    });
    expect(second.output_text).toBe('It is sunny in Paris.');
    const next = g.mock.requests[0]!.body;
    if (model === 'chat-only') {
      expect(next.messages.slice(-2)).toEqual([
        expect.objectContaining({
          role: 'assistant',
          tool_calls: [expect.objectContaining({ id: 'call_1' })],
        }),
        { role: 'tool', tool_call_id: 'call_1', content: '{"sky":"clear"}' },
      ]);
    } else {
      expect(next.input.slice(-2)).toEqual([
        expect.objectContaining({ type: 'function_call', call_id: 'call_1', name: 'get_weather' }),
        { type: 'function_call_output', call_id: 'call_1', output: '{"sky":"clear"}' },
      ]);
    }
  });

  it('streams tool calls as function_call items', async () => {
    g.mock.set({ reply: () => ({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }) });
    const stream = await g
      .client()
      .responses.create({ model, input: 'Oslo?', tools: [weather], stream: true });
    let done: OpenAI.Responses.Response | null = null;
    for await (const event of stream) if (event.type === 'response.completed') done = event.response;
    const call = done!.output.find(
      (o) => o.type === 'function_call',
    ) as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call.name).toBe('get_weather');
    expect(JSON.parse(call.arguments)).toEqual({ city: 'Oslo' });
  });

  it('passes text.format json_schema and reasoning parameters on', async () => {
    g.mock.set({ reply: () => ({ json: { answer: 42 } }) });
    const schema = { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] };
    const res = await g.client().responses.create({
      model,
      input: 'Answer?',
      text: { format: { type: 'json_schema', name: 'answer', schema, strict: true } },
      reasoning: { effort: 'low' },
      temperature: 0.2,
    });
    expect(JSON.parse(res.output_text)).toEqual({ answer: 42 });
    const sent = g.mock.requests[0]!.body;
    if (model === 'chat-only') {
      expect(sent.response_format).toEqual({
        type: 'json_schema',
        json_schema: { name: 'answer', schema, strict: true },
      });
      expect(sent).toMatchObject({ reasoning_effort: 'low', temperature: 0.2 });
    } else {
      expect(sent.text.format).toMatchObject({ type: 'json_schema', name: 'answer' });
      expect(sent).toMatchObject({ reasoning: { effort: 'low' }, temperature: 0.2 });
    }
  });

  it('keeps only the task log of a store: false response', async () => {
    const { data, response } = await g
      .client()
      .responses.create({ model, input: 'Hi', store: false })
      .withResponse();
    await expect(g.client().responses.retrieve(data.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    expect(log.metadata).toMatchObject({ store: false, route: 'responses' });
  });
});

describe('responses: errors and other projects', () => {
  it('answers 400 with every problem, shown by the SDK', async () => {
    const err = await g
      .client()
      .responses.create({
        model: 'chat-only',
        input: [{ type: 'mystery' }, { role: 'robot', content: 'x' }] as never,
        tools: [{ type: 'web_search' }] as never,
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const message = (err as InstanceType<typeof OpenAI.APIError>).message;
    expect(message).toContain('body.input.0.type');
    expect(message).toContain('body.input.1.role');
    expect(message).toContain('body.tools.0');
    const missing = await g.h.call('POST', '/v1/responses', { body: { input: 'Hi' } });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details.issues[0].loc).toEqual(['body', 'model']);
    expect(g.mock.stats.requests).toBe(0);
  });

  it("never serves another project's stored response", async () => {
    const mine = await g.client().responses.create({ model: 'chat-only', input: 'Hi' });
    const other = await g.h.key(['*'], 'other-project');
    const theirs = g.client({ key: other.key });
    await expect(theirs.responses.retrieve(mine.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(theirs.responses.inputItems.list(mine.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(theirs.responses.delete(mine.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      theirs.responses.create({ model: 'openai/gpt-4o-mini', input: 'Hi', previous_response_id: mine.id }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    // Still there for its own project.
    expect((await g.client().responses.retrieve(mine.id)).id).toBe(mine.id);
    const unknown = await g.h.call('GET', '/v1/responses/resp_nope');
    expect(unknown.status).toBe(404);
  });
});

describe('embeddings', () => {
  it('embeds through an OpenAI-compatible upstream, priced by input tokens and recorded', async () => {
    const { data, response } = await g
      .client()
      .embeddings.create({ model: 'chat-only', input: ['one', 'two'] })
      .withResponse();
    expect(g.mock.requests[0]!.path).toBe('/v1/embeddings');
    expect(g.mock.requests[0]!.body.model).toBe('chat-only-upstream');
    expect(data.data).toHaveLength(2);
    expect(data.data[0]!.embedding).toEqual(mockEmbedding('one'));
    // The vectors are not kept on the task log; their size is.
    expect(data.model).toBe('chat-only');
    expect(data.usage).toMatchObject({ prompt_tokens: 24 });
    const cost = Number(response.headers.get('x-evalgate-cost'));
    expect(cost).toBeCloseTo((24 * 2) / 1e6, 12);
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    expect(log).toMatchObject({
      status: 'success',
      model: 'chat-only',
      input: [
        { role: 'user', content: 'one' },
        { role: 'user', content: 'two' },
      ],
      usage: { prompt_tokens: 24, completion_tokens: 0 },
      metadata: { route: 'embeddings' },
      response: {
        data: [
          { index: 0, dimensions: 26 },
          { index: 1, dimensions: 26 },
        ],
      },
    });
    expect(log.cost).toBeCloseTo(cost, 12);
  });

  it('refuses Anthropic models and bad input with 400, and unknown models with 404', async () => {
    await expect(
      g.client().embeddings.create({ model: 'anthropic/claude-haiku-4-5', input: 'x' }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    const bad = await g.h.call('POST', '/v1/embeddings', { body: { model: 'chat-only', input: [] } });
    expect(bad.status).toBe(400);
    const other = await g.h.key(['*'], 'other-project');
    await expect(
      g.client({ key: other.key }).embeddings.create({ model: 'chat-only', input: 'x' }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(g.mock.stats.requests).toBe(0);
  });
});
