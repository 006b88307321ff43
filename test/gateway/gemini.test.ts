import { ApiError, GoogleGenAI, Type } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { type Gateway, startGateway } from './gateway-helpers.js';

/*
 * Google's Gemini API (generateContent, streamGenerateContent?alt=sse) through the official @google/genai
 * SDK with only its base URL changed, translated to a model that speaks chat completions; recorded as task
 * logs like any call and judged by a run over them.
 */

let g: Gateway;
beforeAll(async () => {
  g = await startGateway({ EVALGATE_RUN_POLL_MS: '100' });
  for (const label of ['chat-only', 'judge']) {
    const res = await g.h.call('POST', '/v1/models', {
      body: {
        label,
        base_url: g.mock.baseUrl,
        upstream_model: `${label}-upstream`,
        input_price_per_mtok: 2,
        output_price_per_mtok: 10,
      },
    });
    expect(res.status, res.text).toBe(201);
  }
  expect((await g.h.call('POST', '/v1/containers', { body: { label: 'gemini' } })).status).toBe(201);
});
afterAll(async () => {
  await g.close();
});
beforeEach(() => {
  g.mock.reset();
  g.mock.set({ reply: () => 'Hello from the mock upstream.' });
});

function client(options: { key?: string; container?: string } = {}): GoogleGenAI {
  return new GoogleGenAI({
    apiKey: options.key ?? g.h.admin.key,
    httpOptions: {
      baseUrl: g.h.url,
      ...(options.container ? { headers: { 'X-Evalgate-Container': options.container } } : {}),
    },
  });
}

async function logById(id: string, container = 'default'): Promise<any> {
  const found = (await g.logs(container)).find((l) => l.id === id);
  if (!found) throw new Error(`log ${id} not found`);
  return found;
}

const weather = {
  name: 'get_weather',
  description: 'Weather of a city',
  parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('gemini to a chat-only model', () => {
  it('answers a plain call (systemInstruction, generationConfig) and records it with usage and cost', async () => {
    const answer = await client().models.generateContent({
      model: 'chat-only',
      contents: 'Hi',
      config: {
        systemInstruction: 'Be brief.',
        temperature: 0.2,
        topP: 0.9,
        maxOutputTokens: 50,
        stopSequences: ['END'],
      },
    });
    expect(answer.text).toBe('Hello from the mock upstream.');
    expect(answer.candidates?.[0]?.finishReason).toBe('STOP');
    expect(answer.usageMetadata).toMatchObject({ promptTokenCount: 12, candidatesTokenCount: 7 });
    expect(answer.modelVersion).toBe('chat-only');
    const sent = g.mock.requests[0]!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.body).toMatchObject({
      model: 'chat-only-upstream',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      temperature: 0.2,
      top_p: 0.9,
      max_tokens: 50,
      stop: ['END'],
    });
    const log = await logById(answer.responseId!);
    expect(log).toMatchObject({
      model: 'chat-only',
      status: 'success',
      output: 'Hello from the mock upstream.',
      usage: { prompt_tokens: 12, completion_tokens: 7 },
      metadata: { route: 'gemini', stream: false },
    });
    expect(log.cost).toBeGreaterThan(0);
    expect(log.request).toMatchObject({ contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] });
  });

  it('streams over server-sent events, usage and finish reason last, and records the answer', async () => {
    g.mock.set({ reply: () => 'one two three four' });
    const stream = await client().models.generateContentStream({ model: 'chat-only', contents: 'Count' });
    let text = '';
    let last: any = null;
    for await (const chunk of stream) {
      text += chunk.text ?? '';
      last = chunk;
    }
    expect(text).toBe('one two three four');
    expect(last.candidates[0].finishReason).toBe('STOP');
    expect(last.usageMetadata).toMatchObject({ promptTokenCount: 12, candidatesTokenCount: 7 });
    expect(g.mock.requests[0]!.stream).toBe(true);
    const log = await logById(last.responseId);
    expect(log).toMatchObject({
      status: 'success',
      output: 'one two three four',
      usage: { prompt_tokens: 12, completion_tokens: 7 },
      metadata: { route: 'gemini', stream: true },
    });
  });

  it('calls a function and takes its response back (one round trip, the call id kept)', async () => {
    g.mock.set({
      reply: (req) =>
        req.body.messages.some((m: any) => m.role === 'tool')
          ? 'It is 21 degrees in Paris.'
          : { toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: { city: 'Paris' } }] },
    });
    const ai = client();
    const config = { tools: [{ functionDeclarations: [weather] }] };
    const first = await ai.models.generateContent({
      model: 'chat-only',
      contents: 'Weather in Paris?',
      config,
    });
    expect(first.functionCalls).toEqual([{ id: 'call_w1', name: 'get_weather', args: { city: 'Paris' } }]);
    expect(g.mock.requests[0]!.body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather of a city',
          parameters: weather.parametersJsonSchema,
        },
      },
    ]);
    const second = await ai.models.generateContent({
      model: 'chat-only',
      contents: [
        { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
        first.candidates![0]!.content!,
        {
          role: 'user',
          parts: [{ functionResponse: { id: 'call_w1', name: 'get_weather', response: { temp: 21 } } }],
        },
      ],
      config,
    });
    expect(second.text).toBe('It is 21 degrees in Paris.');
    expect(g.mock.requests[1]!.body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_w1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_w1', content: '{"temp":21}' },
    ]);
  });

  it('streams a function call whole, as Gemini does', async () => {
    g.mock.set({
      reply: () => ({ toolCalls: [{ id: 'call_s', name: 'get_weather', arguments: { city: 'Oslo' } }] }),
    });
    const stream = await client().models.generateContentStream({
      model: 'chat-only',
      contents: 'Weather in Oslo?',
      config: { tools: [{ functionDeclarations: [weather] }] },
    });
    const calls: unknown[] = [];
    for await (const chunk of stream) calls.push(...(chunk.functionCalls ?? []));
    expect(calls).toEqual([{ id: 'call_s', name: 'get_weather', args: { city: 'Oslo' } }]);
  });

  it('asks for JSON-schema output (responseSchema and responseJsonSchema)', async () => {
    g.mock.set({ reply: () => ({ json: { capital: 'Paris' } }) });
    const answer = await client().models.generateContent({
      model: 'chat-only',
      contents: 'Capital of France?',
      config: {
        responseMimeType: 'application/json',
        responseSchema: {
          type: Type.OBJECT,
          properties: { capital: { type: Type.STRING } },
          required: ['capital'],
        },
      },
    });
    expect(JSON.parse(answer.text!)).toEqual({ capital: 'Paris' });
    expect(g.mock.requests[0]!.body.response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'response',
        schema: { type: 'object', properties: { capital: { type: 'string' } }, required: ['capital'] },
      },
    });
    const schema = { type: 'object', properties: { n: { type: 'integer' } } };
    await client().models.generateContent({
      model: 'chat-only',
      contents: 'A number',
      config: { responseMimeType: 'application/json', responseJsonSchema: schema },
    });
    expect(g.mock.requests[1]!.body.response_format.json_schema.schema).toEqual(schema);
  });
});

describe('gemini calls judged', () => {
  it('records the calls in the container named by the header, and a run judges them', async () => {
    g.mock.set({
      reply: (req) =>
        req.body.model === 'judge-upstream'
          ? { json: { score: 1, reasoning: 'fine' } }
          : { text: 'Paris.', promptTokens: 11, completionTokens: 2 },
    });
    const ai = client({ container: 'gemini' });
    await ai.models.generateContent({ model: 'chat-only', contents: 'Capital of France?' });
    for await (const _ of await ai.models.generateContentStream({
      model: 'chat-only',
      contents: 'And of Italy?',
    })) {
      // drained
    }
    const logs = await g.logs('gemini');
    expect(logs.map((l) => l.metadata.route)).toEqual(['gemini', 'gemini']);
    const ev = await g.h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'gemini-rate', model: 'judge', prompt: 'Rate {{output}}' },
    });
    expect(ev.status, ev.text).toBe(201);
    const created = await g.h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'gemini',
        evaluators: ['gemini-rate'],
        sample: { type: 'container', container: 'gemini' },
      },
    });
    expect(created.status, created.text).toBe(201);
    await waitFor(
      async () =>
        ['completed', 'error'].includes(
          (await g.h.call('GET', `/v1/evaluation/runs/${created.body.id}`)).body.status,
        ),
      30_000,
      'run ended',
    );
    const run = await g.h.call('GET', `/v1/evaluation/runs/${created.body.id}`);
    expect(run.body.status).toBe('completed');
    const samples = await g.h.call('GET', `/v1/evaluation/runs/${created.body.id}/samples?limit=10`);
    expect(samples.body.data).toHaveLength(2);
    for (const sample of samples.body.data) expect(sample.status).not.toBe('missing');
    const judged = g.mock.requests.filter((r) => r.body.model === 'judge-upstream');
    expect(judged).toHaveLength(2);
    expect(judged.map((r) => JSON.stringify(r.body.messages)).join()).toContain('Paris.');
  });
});

describe('gemini errors', () => {
  it("answers an unknown model 404 in Google's shape, which the SDK raises", async () => {
    const err = await client()
      .models.generateContent({ model: 'no-such-model', contents: 'Hi' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(404);
    const raw = await fetch(`${g.h.url}/v1beta/models/no-such-model:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': g.h.admin.key },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] }),
    });
    expect(raw.status).toBe(404);
    expect(await raw.json()).toMatchObject({
      error: { code: 404, status: 'NOT_FOUND', message: "Model 'no-such-model' not found" },
    });
    expect(g.mock.stats.requests).toBe(0);
  });

  it('answers a bad body 400, an unknown method 404, a stream without alt=sse 400, a bad key 401', async () => {
    const post = (path: string, body: unknown, key = g.h.admin.key) =>
      fetch(`${g.h.url}/v1beta/models/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
        body: JSON.stringify(body),
      });
    const empty = await post('chat-only:generateContent', { contents: [] });
    expect(empty.status).toBe(400);
    expect((await empty.json()) as any).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT' } });
    const badPart = await post('chat-only:generateContent', {
      contents: [{ role: 'model', parts: [{ x: 1 }] }],
    });
    expect(badPart.status).toBe(400);
    expect(((await badPart.json()) as any).error.message).toMatch(/contents\.0\.parts\.0/);
    const unknown = await post('chat-only:embedContent', { contents: [{ parts: [{ text: 'Hi' }] }] });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as any).error.status).toBe('NOT_FOUND');
    const notSse = await post('chat-only:streamGenerateContent', { contents: [{ parts: [{ text: 'Hi' }] }] });
    expect(notSse.status).toBe(400);
    const badKey = await post(
      'chat-only:generateContent',
      { contents: [{ parts: [{ text: 'Hi' }] }] },
      'eg_nope',
    );
    expect(badKey.status).toBe(401);
    expect(((await badKey.json()) as any).error.status).toBe('UNAUTHENTICATED');
    expect(g.mock.stats.requests).toBe(0);
  });

  it("never lets another project's key reach this project's model or see its calls", async () => {
    const mine = await client().models.generateContent({ model: 'chat-only', contents: 'Mine' });
    const other = await g.h.key(['*'], 'other-project');
    const err = await client({ key: other.key })
      .models.generateContent({ model: 'chat-only', contents: 'Theirs' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(404);
    const theirLogs = await g.h.call('GET', '/v1/containers/default/logs?limit=100', { key: other.key });
    expect(theirLogs.status).toBe(200);
    expect(theirLogs.body.data.map((l: any) => l.id)).not.toContain(mine.responseId);
    const ours = await g.h.call('GET', `/v1/containers/default/logs?limit=100`);
    expect(ours.body.data.map((l: any) => l.id)).toContain(mine.responseId);
  });
});
