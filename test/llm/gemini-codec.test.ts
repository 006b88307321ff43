// Database-independent: Gemini's request and answer translation are pure functions of their input.
import { describe, expect, it } from 'vitest';
import { GeminiStreamEncoder, generateContentOf } from '../../src/llm/dialects/gemini/answer.js';
import { googleErrorBody } from '../../src/llm/dialects/gemini/errors.js';
import { decodeGeminiRequest, jsonSchemaOf } from '../../src/llm/dialects/gemini/request.js';
import type { StreamResult } from '../../src/llm/stream-pump.js';
import { ApiError } from '../../src/shared/errors.js';

const frame = { id: 'resp-1', model: 'gemini-test' };

describe('Gemini requests as the internal call', () => {
  it('turns contents, the system instruction, tools and generation config into a chat request', () => {
    const request = decodeGeminiRequest(
      {
        systemInstruction: { parts: [{ text: 'Be brief.' }] },
        contents: [
          { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
          { role: 'model', parts: [{ functionCall: { name: 'weather', args: { city: 'Paris' } } }] },
          { role: 'user', parts: [{ functionResponse: { name: 'weather', response: { temp: 21 } } }] },
        ],
        tools: [
          {
            functionDeclarations: [
              {
                name: 'weather',
                description: 'The weather of a city',
                parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } }, required: ['city'] },
              },
            ],
          },
        ],
        toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['weather'] } },
        generationConfig: { temperature: 0.2, maxOutputTokens: 64, topP: 0.9, stopSequences: ['END'] },
      },
      'gemini-test',
      false,
    );
    expect(request).toMatchObject({
      model: 'gemini-test',
      temperature: 0.2,
      max_tokens: 64,
      top_p: 0.9,
      stop: ['END'],
      tool_choice: { type: 'function', function: { name: 'weather' } },
    });
    expect(request.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    const call = (
      request.messages[2] as unknown as { tool_calls: { id: string; function: { arguments: string } }[] }
    ).tool_calls[0]!;
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
    // The response is matched to the call it answers, although neither carried an id.
    expect((request.messages[3] as unknown as { tool_call_id: string }).tool_call_id).toBe(call.id);
    expect(request.tools).toEqual([
      {
        type: 'function',
        function: expect.objectContaining({
          name: 'weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        }),
      },
    ]);
    expect(request.stream).toBeUndefined();
  });

  it('asks for usage on streams and maps JSON-schema output', () => {
    const request = decodeGeminiRequest(
      {
        contents: [{ role: 'user', parts: [{ text: 'A city as JSON' }] }],
        generationConfig: {
          responseMimeType: 'application/json',
          responseSchema: { type: 'OBJECT', properties: { name: { type: 'STRING', nullable: true } } },
        },
      },
      'm',
      true,
    );
    expect(request.stream).toBe(true);
    expect(request.stream_options).toEqual({ include_usage: true });
    expect(request.response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'response',
        schema: { type: 'object', properties: { name: { type: ['string', 'null'] } } },
      },
    });
    expect(jsonSchemaOf({ type: 'ARRAY', items: { type: 'INTEGER' } })).toEqual({
      type: 'array',
      items: { type: 'integer' },
    });
  });

  it('names every problem of a bad body at once', () => {
    let caught: unknown;
    try {
      decodeGeminiRequest(
        { contents: [{ role: 'robot', parts: [] }, 'x'], tools: 'none', generationConfig: 3 },
        'm',
        false,
      );
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect((caught as ApiError).status).toBe(422);
    const text = JSON.stringify((caught as ApiError).issues);
    for (const where of ['role', 'contents', 'tools', 'generationConfig']) expect(text).toContain(where);
  });
});

describe('answers as Gemini sends them', () => {
  it('turns a chat completion into a GenerateContentResponse', () => {
    const answer = generateContentOf(frame, {
      id: 'c',
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: 'Checking.',
            tool_calls: [
              { id: 't1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
            ],
          },
        },
      ],
      usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
    });
    expect(answer).toEqual({
      candidates: [
        {
          content: {
            role: 'model',
            parts: [
              { text: 'Checking.' },
              { functionCall: { id: 't1', name: 'weather', args: { city: 'Oslo' } } },
            ],
          },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 3, totalTokenCount: 10 },
      modelVersion: 'gemini-test',
      responseId: 'resp-1',
    });
  });

  it('streams text as it comes and each function call whole, the finish reason and usage last', () => {
    const encoder = new GeminiStreamEncoder(frame);
    const events = [
      encoder.start(),
      encoder.chunk({ choices: [{ index: 0, delta: { content: 'Hi' } }] }),
      encoder.chunk({
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index: 0, id: 't1', function: { name: 'we', arguments: '{"ci' } }] },
          },
        ],
      }),
      encoder.chunk({
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index: 0, function: { name: 'ather', arguments: 'ty":"Rome"}' } }] },
          },
        ],
      }),
      encoder.chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'length' }] }),
      encoder.end({
        usage: { prompt_tokens: 2, completion_tokens: 5, total_tokens: 7 },
        error: null,
      } as StreamResult),
    ].join('');
    const bodies = events
      .split('\r\n\r\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => JSON.parse(e.slice(6)));
    expect(bodies).toHaveLength(2);
    expect(bodies[0].candidates[0].content.parts).toEqual([{ text: 'Hi' }]);
    expect(bodies[1].candidates[0]).toEqual({
      content: {
        role: 'model',
        parts: [{ functionCall: { id: 't1', name: 'weather', args: { city: 'Rome' } } }],
      },
      finishReason: 'MAX_TOKENS',
      index: 0,
    });
    expect(bodies[1].usageMetadata).toEqual({
      promptTokenCount: 2,
      candidatesTokenCount: 5,
      totalTokenCount: 7,
    });
  });

  it('ends a failed stream with one error event in Google’s shape', () => {
    const encoder = new GeminiStreamEncoder(frame);
    const failed = encoder.end({
      usage: null,
      error: { code: 'upstream_error', message: 'The upstream failed' },
    } as StreamResult);
    const body = JSON.parse(failed.replace(/^data: /, ''));
    expect(body.error).toMatchObject({ message: 'The upstream failed' });
    expect(typeof body.error.status).toBe('string');
    expect(googleErrorBody(404, 'No such model')).toEqual({
      error: { code: 404, message: 'No such model', status: 'NOT_FOUND' },
    });
  });
});
