// Database-independent: the Gemini provider's translations in both directions, pure functions without a server.
import { describe, expect, it } from 'vitest';
import { GEMINI } from '../../src/llm/dialects/gemini/index.js';
import { priceTable } from '../../src/llm/models/prices.js';
import { frontierKind, splitFrontierSlug } from '../../src/llm/models/resolve.js';
import {
  fromGenerateContentResponse,
  GeminiStreamTranslator,
  geminiMethodPath,
  usageOf,
} from '../../src/llm/providers/gemini.js';
import { geminiNative } from '../../src/llm/providers/gemini-native.js';
import { toGenerateContentRequest } from '../../src/llm/providers/gemini-request.js';
import { PROVIDERS } from '../../src/llm/providers/index.js';
import { DONE, UpstreamStreamError } from '../../src/llm/providers/types.js';
import type { ChatRequest } from '../../src/llm/types.js';
import { ApiError } from '../../src/shared/errors.js';
import { modelAt } from './layer-helpers.js';

const model = modelAt('http://127.0.0.1:1/v1beta', {
  slug: 'gemini/gemini-2.5-flash',
  provider: 'gemini',
  upstreamModel: 'gemini-2.5-flash',
});
const ctx = (request: Partial<ChatRequest> = {}, clientWantsUsage = false) => ({
  model,
  request: { model: 'm', messages: [], ...request } as ChatRequest,
  clientWantsUsage,
});

describe('chat request → generateContent', () => {
  it('translates system and developer text, images, tool calls and their results', () => {
    const body = toGenerateContentRequest({
      model: 'm',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: [{ type: 'text', text: 'Use metric units.' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.webp?x=1' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Let me look.',
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'look', arguments: '{"at":"cat"}' } },
            { id: 'c2', type: 'function', function: { name: 'weigh', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'a cat' },
        { role: 'tool', tool_call_id: 'c2', content: '{"kg":4}' },
      ],
    });
    expect(body).toEqual({
      systemInstruction: { parts: [{ text: 'Be brief.\n\nUse metric units.' }] },
      contents: [
        {
          role: 'user',
          parts: [
            { text: 'What is this?' },
            { inlineData: { mimeType: 'image/png', data: 'AAAA' } },
            { fileData: { fileUri: 'https://example.com/cat.webp?x=1', mimeType: 'image/webp' } },
          ],
        },
        {
          role: 'model',
          parts: [
            { text: 'Let me look.' },
            { functionCall: { name: 'look', args: { at: 'cat' } } },
            { functionCall: { name: 'weigh', args: {} } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'look', response: { result: 'a cat' } } },
            { functionResponse: { name: 'weigh', response: { kg: 4 } } },
          ],
        },
      ],
    });
  });

  it('puts sampling, stop and the response format in generationConfig, tool choice in toolConfig', () => {
    const base = { model: 'm', messages: [{ role: 'user', content: 'Hi' }] };
    const body = toGenerateContentRequest({
      ...base,
      temperature: 0,
      top_p: 0.5,
      top_k: 3,
      seed: 7,
      max_completion_tokens: 99,
      max_tokens: 10,
      stop: 'END',
      response_format: { type: 'json_object' },
      tools: [{ type: 'function', function: { name: 'f' } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
    });
    expect(body.generationConfig).toEqual({
      temperature: 0,
      topP: 0.5,
      topK: 3,
      seed: 7,
      maxOutputTokens: 99,
      stopSequences: ['END'],
      responseMimeType: 'application/json',
    });
    expect(body.tools).toEqual([{ functionDeclarations: [{ name: 'f' }] }]);
    expect(body.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['f'] } });
    expect(toGenerateContentRequest({ ...base, tool_choice: 'required' }).toolConfig).toEqual({
      functionCallingConfig: { mode: 'ANY' },
    });
    expect(toGenerateContentRequest({ ...base, tool_choice: 'none' }).toolConfig).toEqual({
      functionCallingConfig: { mode: 'NONE' },
    });
    expect(toGenerateContentRequest(base)).toEqual({ contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] });
  });

  it('refuses what Gemini cannot take with a 400 naming the field', () => {
    const user = { role: 'user', content: 'Hi' };
    const cases: [Partial<ChatRequest>, string][] = [
      [{ n: 2 }, 'n'],
      [{ messages: [{ role: 'user', content: [{ type: 'input_audio' }] }] }, 'messages'],
      [
        { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x' } }] }] },
        'messages',
      ],
      [{ messages: [{ role: 'critic', content: 'x' }] }, 'messages'],
      [{ messages: [user, { role: 'tool', tool_call_id: 'nope', content: 'x' }] }, 'messages'],
      [
        {
          messages: [
            { role: 'assistant', tool_calls: [{ id: 'a', function: { name: 'f', arguments: '{oops' } }] },
          ],
        },
        'messages',
      ],
      [{ tools: [{ type: 'web_search' }] }, 'tools'],
    ];
    for (const [request, field] of cases) {
      let error: unknown;
      try {
        toGenerateContentRequest({ model: 'm', messages: [user], ...request } as ChatRequest);
      } catch (err) {
        error = err;
      }
      expect(error, JSON.stringify(request)).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(400);
      expect((error as ApiError).details).toMatchObject({ provider: 'gemini', field });
    }
  });

  it('calls models/{model}:generateContent and :streamGenerateContent?alt=sse with x-goog-api-key', () => {
    expect(geminiMethodPath(model, false)).toBe('/models/gemini-2.5-flash:generateContent');
    expect(geminiMethodPath(model, true)).toBe('/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    const odd = { ...model, upstreamModel: 'models/tuned model/v 1' };
    expect(geminiMethodPath(odd, false)).toBe('/models/tuned%20model/v%201:generateContent');
    expect(PROVIDERS.gemini.headers(model)).toEqual({
      'content-type': 'application/json',
      'x-goog-api-key': 'sk-test',
    });
  });
});

describe('generateContent answer → chat completion', () => {
  it('reads text (not thoughts), function calls with their signatures, finish reason and usage', () => {
    const completion = fromGenerateContentResponse(
      {
        responseId: 'r1',
        modelVersion: 'gemini-2.5-flash-001',
        candidates: [
          {
            content: {
              role: 'model',
              parts: [
                { text: 'thinking…', thought: true },
                { text: 'Calling.' },
                { functionCall: { id: 'fc1', name: 'f', args: { a: 1 } }, thoughtSignature: 'sig' },
              ],
            },
            finishReason: 'STOP',
          },
        ],
        usageMetadata: {
          promptTokenCount: 10,
          cachedContentTokenCount: 4,
          candidatesTokenCount: 5,
          thoughtsTokenCount: 3,
          totalTokenCount: 18,
        },
      },
      ctx(),
    );
    expect(completion).toMatchObject({
      id: 'r1',
      model: 'gemini-2.5-flash-001',
      choices: [
        {
          message: {
            role: 'assistant',
            content: 'Calling.',
            tool_calls: [
              {
                id: 'fc1',
                type: 'function',
                function: { name: 'f', arguments: '{"a":1}' },
                extra_content: { google: { thought_signature: 'sig' } },
              },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: {
        prompt_tokens: 10,
        completion_tokens: 8,
        total_tokens: 18,
        prompt_tokens_details: { cached_tokens: 4 },
        completion_tokens_details: { reasoning_tokens: 3 },
      },
    });
  });

  it('maps the finish reasons', () => {
    const finish = (finishReason: string) =>
      fromGenerateContentResponse(
        { candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason }] },
        ctx(),
      ).choices[0]!.finish_reason;
    expect(finish('STOP')).toBe('stop');
    expect(finish('MAX_TOKENS')).toBe('length');
    expect(finish('SAFETY')).toBe('content_filter');
    expect(finish('RECITATION')).toBe('content_filter');
    expect(finish('OTHER')).toBe('stop');
    expect(usageOf(undefined)).toBeNull();
  });
});

describe('Gemini stream → chat chunks', () => {
  const event = (body: object) => ({ event: null, data: JSON.stringify(body) });

  it('sends text as it comes, function calls whole, the finish and (when asked) usage, then [DONE]', () => {
    const t = new GeminiStreamTranslator(ctx({}, true));
    const first = t.event(
      event({
        responseId: 'r',
        candidates: [{ content: { parts: [{ text: 'Hel' }] } }],
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1 },
      }),
    );
    expect(first.map((c) => JSON.parse(c).choices[0].delta)).toEqual([
      { role: 'assistant', content: '' },
      { content: 'Hel' },
    ]);
    expect(t.done).toBe(false);
    const last = t.event(
      event({
        candidates: [
          {
            content: { parts: [{ text: 'lo' }, { functionCall: { name: 'f', args: {} } }] },
            finishReason: 'STOP',
          },
        ],
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, totalTokenCount: 7 },
      }),
    );
    expect(last.at(-1)).toBe(DONE);
    const chunks = last.slice(0, -1).map((c) => JSON.parse(c));
    expect(chunks[0].choices[0].delta).toEqual({ content: 'lo' });
    expect(chunks[1].choices[0].delta.tool_calls[0]).toMatchObject({
      index: 0,
      type: 'function',
      function: { name: 'f', arguments: '{}' },
    });
    expect(chunks[2].choices[0].finish_reason).toBe('tool_calls');
    expect(chunks[3]).toMatchObject({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 4 } });
    expect(t.done).toBe(true);
    expect(t.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    expect(t.event(event({ candidates: [] }))).toEqual([]);
  });

  it('leaves the usage chunk out unless the client asked, and throws on an error event', () => {
    const t = new GeminiStreamTranslator(ctx());
    const out = t.event(
      event({ candidates: [{ content: { parts: [] }, finishReason: 'MAX_TOKENS' }], usageMetadata: {} }),
    );
    expect(out.map((c) => (c === DONE ? c : JSON.parse(c).choices.length))).toEqual([1, 1, DONE]);
    const broken = new GeminiStreamTranslator(ctx());
    const overloaded = () =>
      broken.event(
        event({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } }),
      );
    expect(overloaded).toThrow(UpstreamStreamError);
    expect(overloaded).toThrow('The model is overloaded.');
    try {
      broken.event(event({ error: { code: 400, message: 'bad', status: 'INVALID_ARGUMENT' } }));
    } catch (err) {
      expect((err as UpstreamStreamError).code).toBe('upstream_error');
    }
    expect(() => broken.event({ event: null, data: '{not json' })).toThrow(UpstreamStreamError);
  });
});

describe('native generateContent', () => {
  it("sends the client's body without the internal call's fields, the model's defaults under its own", () => {
    const request = {
      model: 'gem',
      messages: [],
      stream: true,
      stream_options: { include_usage: true },
      contents: [{ parts: [{ text: 'Hi' }] }],
      generationConfig: { temperature: 0.9 },
      temperature: 0.1,
      max_tokens: 20,
    } as ChatRequest;
    const defaults = { temperature: 0.1, max_tokens: 20, system: 'Be kind.' };
    const body = geminiNative.requestBody(
      { ...ctx(request), model: { ...model, defaultParameters: defaults } },
      true,
    );
    expect(body).toEqual({
      contents: [{ parts: [{ text: 'Hi' }] }],
      generationConfig: { temperature: 0.9, maxOutputTokens: 20 },
      systemInstruction: { parts: [{ text: 'Be kind.' }] },
    });
    expect(geminiNative.requestBody(ctx({ contents: [] } as never), false)).toEqual({ contents: [] });
  });

  it('goes natively only to Gemini models, relabelled, and records a stream as one completion', () => {
    const call = GEMINI.codec.native({ contents: [], labels: { team: 'a' } }, { id: 'log_1', model: 'gem' });
    expect(call.request).not.toHaveProperty('labels');
    expect(call.accepts(model)).toBe(true);
    expect(call.accepts({ ...model, provider: 'anthropic' })).toBe(false);
    expect(JSON.parse(call.plain('{"responseId":"up","modelVersion":"g-001","candidates":[]}'))).toEqual({
      responseId: 'log_1',
      modelVersion: 'gem',
      candidates: [],
    });
    const encoder = call.stream();
    expect(encoder.chunk({ responseId: 'up', candidates: [] })).toBe(
      'data: {"responseId":"log_1","candidates":[],"modelVersion":"gem"}\r\n\r\n',
    );
    const sse = [
      { candidates: [{ content: { parts: [{ text: 'a' }] } }] },
      {
        candidates: [{ content: { parts: [{ text: 'b' }] }, finishReason: 'STOP' }],
        usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 2 },
      },
    ]
      .map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`)
      .join('');
    const recorded = call.recorded(sse, model);
    expect(recorded?.choices[0]?.message.content).toBe('ab');
    expect(recorded?.usage).toMatchObject({ prompt_tokens: 1, completion_tokens: 2 });
  });
});

describe('gemini/<name> and the price table', () => {
  it('names the gemini provider kind and prices the bundled Gemini models', () => {
    expect(splitFrontierSlug('gemini/gemini-2.5-flash')).toEqual(['gemini', 'gemini-2.5-flash']);
    expect(frontierKind('gemini')).toBe('gemini');
    expect(frontierKind('openai')).toBe('openai-compatible');
    const table = priceTable();
    expect(table.find('gemini', 'gemini-2.5-flash')).toMatchObject({ inputPerMtok: 0.3, outputPerMtok: 2.5 });
    expect(table.find('gemini', 'gemini-2.0-flash-001')?.model).toBe('gemini-2.0-flash');
  });
});
