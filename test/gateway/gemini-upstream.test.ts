// Database-independent: calls to a Gemini upstream (translation, native passthrough, retries); recording goes through the same log writer that test/capture runs on both databases.
import { GoogleGenAI } from '@google/genai';
import type OpenAI from 'openai';
import type { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type MockGemini, startMockGemini } from '../fixtures/mock-gemini.js';
import { type Gateway, startGateway } from './gateway-helpers.js';

/*
 * Google's Gemini API as an upstream: `gemini/<name>` (the operator's key) and registered models of
 * provider `gemini`, called by the official OpenAI SDK (translated to generateContent and back) and by
 * @google/genai (natively: the body goes as it is, the answer comes back as it came), recorded and priced.
 */

let g: Gateway;
let gem: MockGemini;
beforeAll(async () => {
  gem = await startMockGemini();
  g = await startGateway({
    GEMINI_API_KEY: 'operator-gemini-key',
    GEMINI_BASE_URL: gem.baseUrl,
    EVALGATE_UPSTREAM_RETRIES: '2',
  });
  const res = await g.h.call('POST', '/v1/models', {
    body: {
      label: 'gem',
      provider: 'gemini',
      base_url: gem.baseUrl,
      upstream_model: 'gemini-2.5-pro',
      api_key: 'registered-gemini-key',
      input_price_per_mtok: 2,
      output_price_per_mtok: 10,
    },
  });
  expect(res.status, res.text).toBe(201);
});
afterAll(async () => {
  await g.close();
  await gem.close();
});
beforeEach(() => {
  gem.reset();
});

const FLASH = 'gemini/gemini-2.5-flash';

async function logOf(id: string | null | undefined): Promise<any> {
  const log = (await g.logs('default')).find((l) => l.id === id);
  if (!log) throw new Error(`no log ${id}`);
  return log;
}

function genai(): GoogleGenAI {
  return new GoogleGenAI({ apiKey: g.h.admin.key, httpOptions: { baseUrl: g.h.url } });
}

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('the OpenAI SDK to a Gemini model', () => {
  it('answers a plain call, translated, and records it priced from the table', async () => {
    const { data, response } = await g
      .client()
      .chat.completions.create({
        model: FLASH,
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi' },
        ],
        temperature: 0.2,
        top_p: 0.9,
        max_tokens: 50,
        stop: ['END'],
      })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe('Hello from the mock Gemini.');
    expect(data.choices[0]!.finish_reason).toBe('stop');
    expect(data.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 });
    const sent = gem.requests[0]!;
    expect(sent).toMatchObject({ model: 'gemini-2.5-flash', method: 'generateContent', stream: false });
    expect(sent.headers['x-goog-api-key']).toBe('operator-gemini-key');
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { temperature: 0.2, topP: 0.9, maxOutputTokens: 50, stopSequences: ['END'] },
    });
    const log = await logOf(response.headers.get('x-evalgate-log-id'));
    expect(log).toMatchObject({
      model: FLASH,
      status: 'success',
      output: 'Hello from the mock Gemini.',
      usage: { prompt_tokens: 12, completion_tokens: 7 },
    });
    // gemini-2.5-flash at $0.30 / $2.50 per million tokens.
    expect(log.cost).toBeCloseTo((12 * 0.3 + 7 * 2.5) / 1e6, 12);
  });

  it('streams (alt=sse), usage last, and records the answer with its cost', async () => {
    gem.set({ reply: () => ({ text: 'one two three four', thoughtsTokens: 5 }) });
    const stream = await g.client().chat.completions.create({
      model: FLASH,
      messages: [{ role: 'user', content: 'Count' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null = null;
    let id = '';
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
      id = chunk.id;
    }
    expect(text).toBe('one two three four');
    expect(finish).toBe('stop');
    // The thinking tokens are billed as output.
    expect(usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 12, total_tokens: 24 });
    expect(usage?.completion_tokens_details?.reasoning_tokens).toBe(5);
    expect(gem.requests[0]).toMatchObject({ method: 'streamGenerateContent', query: 'alt=sse' });
    const logs = await g.logs('default');
    const log = logs.find((l) => l.metadata?.stream === true && l.output === 'one two three four');
    expect(log, id).toBeDefined();
    expect(log).toMatchObject({ status: 'success', usage: { prompt_tokens: 12, completion_tokens: 12 } });
    expect(log.cost).toBeCloseTo((12 * 0.3 + 12 * 2.5) / 1e6, 12);
  });

  it('calls a function and takes its result back (a round trip of tool calls)', async () => {
    gem.set({
      reply: (req) =>
        req.body.contents.some((c: any) => c.parts.some((p: any) => p.functionResponse))
          ? 'It is 21 degrees in Paris.'
          : { functionCalls: [{ name: 'get_weather', args: { city: 'Paris' }, thoughtSignature: 'sig-1' }] },
    });
    const client = g.client();
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.chat.completions.create({
      model: FLASH,
      messages,
      tools: [weather],
      tool_choice: 'auto',
    });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    const call = choice.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    expect(call.id).toMatch(/^call_/);
    expect(gem.requests[0]!.body).toMatchObject({
      tools: [
        {
          functionDeclarations: [
            {
              name: 'get_weather',
              description: 'Weather of a city',
              parametersJsonSchema: weather.function.parameters,
            },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
    });
    messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: '{"temp":21}' });
    const second = await client.chat.completions.create({ model: FLASH, messages, tools: [weather] });
    expect(second.choices[0]!.message.content).toBe('It is 21 degrees in Paris.');
    expect(gem.requests[1]!.body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
      {
        role: 'model',
        // The thought signature went to the client on the tool call and came back with it.
        parts: [
          { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'sig-1' },
        ],
      },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temp: 21 } } }] },
    ]);
  });

  it('streams a function call as one tool-call chunk', async () => {
    gem.set({ reply: () => ({ functionCalls: [{ name: 'get_weather', args: { city: 'Oslo' } }] }) });
    const stream = await g.client().chat.completions.create({
      model: FLASH,
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [weather],
      stream: true,
    });
    const calls: any[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      calls.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      index: 0,
      function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
    });
    expect(finish).toBe('tool_calls');
  });

  it('asks for JSON-schema output (responseMimeType and responseJsonSchema)', async () => {
    gem.set({ reply: () => '{"capital":"Paris"}' });
    const schema = {
      type: 'object',
      properties: { capital: { type: 'string' } },
      required: ['capital'],
      additionalProperties: false,
    };
    const answer = await g.client().chat.completions.create({
      model: FLASH,
      messages: [{ role: 'user', content: 'Capital of France?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'capital', schema, strict: true } },
    });
    expect(JSON.parse(answer.choices[0]!.message.content!)).toEqual({ capital: 'Paris' });
    expect(gem.requests[0]!.body.generationConfig).toEqual({
      responseMimeType: 'application/json',
      responseJsonSchema: schema,
    });
  });

  it('retries an upstream 500, then answers', async () => {
    gem.fail({ status: 500 }, { status: 503 });
    const { data, response } = await g
      .client()
      .chat.completions.create({ model: FLASH, messages: [{ role: 'user', content: 'Hi' }] })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe('Hello from the mock Gemini.');
    expect(gem.requests).toHaveLength(3);
    const log = await logOf(response.headers.get('x-evalgate-log-id'));
    expect(log.metadata).toMatchObject({ attempts: 3 });
  });

  it("passes an upstream 429 on as 429 rate_limit_exceeded with Google's message and Retry-After", async () => {
    gem.fail({ status: 429, retryAfter: 7, message: 'Quota exceeded for generate_content' });
    const err = (await g
      .client()
      .chat.completions.create({ model: FLASH, messages: [{ role: 'user', content: 'Hi' }] })
      .catch((e) => e)) as APIError;
    expect(err.status).toBe(429);
    expect(err.code).toBe('rate_limit_exceeded');
    expect(err.message).toContain('Quota exceeded for generate_content');
    expect(err.headers?.get('retry-after')).toBe('7');
  });

  it("ends a stream that Google's error event broke with an error, and records it as one", async () => {
    gem.fail({
      events: [
        { candidates: [{ content: { role: 'model', parts: [{ text: 'Half an ans' }] } }] },
        { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } },
      ],
    });
    const stream = await g.client().chat.completions.create({
      model: FLASH,
      messages: [{ role: 'user', content: 'Break' }],
      stream: true,
    });
    let text = '';
    const err = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().catch((e) => e);
    expect(text).toBe('Half an ans');
    expect(String(err?.message)).toContain('The model is overloaded.');
    const log = (await g.logs('default')).find((l) => l.input?.[0]?.content === 'Break');
    expect(log).toMatchObject({ status: 'error', error: { code: 'upstream_unavailable' } });
  });

  it('answers 400 for a bad request the upstream refused, and for a tool result that answers no call', async () => {
    gem.fail({ status: 400, message: 'Invalid JSON payload received.' });
    const refused = await g.h.call('POST', '/v1/chat/completions', {
      body: { model: FLASH, messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('Invalid JSON payload received.');
    const orphan = await g.h.call('POST', '/v1/chat/completions', {
      body: {
        model: FLASH,
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'tool', tool_call_id: 'call_x', content: '1' },
        ],
      },
    });
    expect(orphan.status).toBe(400);
    expect(orphan.body.error.message).toMatch(/answers no tool call/);
  });
});

describe('@google/genai to a Gemini model, natively', () => {
  it('sends the body as it came and answers as the upstream did, relabelled and recorded', async () => {
    const answer = await genai().models.generateContent({
      model: 'gem',
      contents: 'Hi',
      config: {
        systemInstruction: 'Be brief.',
        temperature: 0.3,
        safetySettings: [
          { category: 'HARM_CATEGORY_HARASSMENT' as any, threshold: 'BLOCK_ONLY_HIGH' as any },
        ],
      },
    });
    expect(answer.text).toBe('Hello from the mock Gemini.');
    expect(answer.modelVersion).toBe('gem');
    expect(answer.responseId).toMatch(/^log_/);
    const sent = gem.requests[0]!;
    expect(sent.model).toBe('gemini-2.5-pro');
    expect(sent.headers['x-goog-api-key']).toBe('registered-gemini-key');
    // Fields the translation knows nothing of (safetySettings) go through untouched.
    expect(sent.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
      systemInstruction: { role: 'user', parts: [{ text: 'Be brief.' }] },
      generationConfig: { temperature: 0.3 },
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }],
    });
    const log = await logOf(answer.responseId);
    expect(log).toMatchObject({
      model: 'gem',
      status: 'success',
      output: 'Hello from the mock Gemini.',
      usage: { prompt_tokens: 12, completion_tokens: 7 },
      metadata: { route: 'gemini', stream: false },
    });
    expect(log.cost).toBeCloseTo((12 * 2 + 7 * 10) / 1e6, 12);
  });

  it('streams the upstream events as they came, and records the answer and usage', async () => {
    gem.set({ reply: () => ({ text: 'alpha beta gamma delta', functionCalls: [] }) });
    const stream = await genai().models.generateContentStream({ model: FLASH, contents: 'Go' });
    let text = '';
    let last: any = null;
    let events = 0;
    for await (const chunk of stream) {
      text += chunk.text ?? '';
      last = chunk;
      events++;
    }
    expect(text).toBe('alpha beta gamma delta');
    // The mock's own events: one per 8 characters, then the last one.
    expect(events).toBe(4);
    expect(last.candidates[0].finishReason).toBe('STOP');
    expect(last.usageMetadata).toMatchObject({ promptTokenCount: 12, candidatesTokenCount: 7 });
    expect(last.modelVersion).toBe(FLASH);
    expect(gem.requests[0]).toMatchObject({ method: 'streamGenerateContent', query: 'alt=sse' });
    expect(gem.requests[0]!.body).toEqual({ contents: [{ role: 'user', parts: [{ text: 'Go' }] }] });
    const log = await logOf(last.responseId);
    expect(log).toMatchObject({
      status: 'success',
      output: 'alpha beta gamma delta',
      usage: { prompt_tokens: 12, completion_tokens: 7 },
      metadata: { route: 'gemini', stream: true },
    });
    expect(log.cost).toBeCloseTo((12 * 0.3 + 7 * 2.5) / 1e6, 12);
  });

  it("passes an upstream 429 on in Google's error shape", async () => {
    gem.fail({ status: 429, retryAfter: 3, message: 'Resource has been exhausted' });
    const err = (await genai()
      .models.generateContent({ model: 'gem', contents: 'Hi' })
      .catch((e) => e)) as { status?: number; message: string };
    expect(err.status).toBe(429);
    expect(err.message).toContain('Resource has been exhausted');
  });
});

describe('the Gemini provider in the catalogue', () => {
  it('lists the priced Gemini models of the enabled provider', async () => {
    const res = await g.h.call('GET', '/v1/models');
    expect(res.status).toBe(200);
    const ids = res.body.data.map((m: any) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['gemini/gemini-2.5-flash', 'gemini/gemini-2.5-pro', 'gem']));
  });
});
