// Database-independent: server-sent events parsing and cost formatting are pure functions.
import { describe, expect, it } from 'vitest';
import { formatCost } from '../../src/gateway/routes.js';
import { assembleCompletion } from '../../src/llm/assemble.js';
import { SseReader, ssePayloads } from '../../src/llm/sse.js';

describe('server-sent events reader', () => {
  it('reassembles events split anywhere, with CRLF, named events, comments and multi-line data', () => {
    const text =
      ': keep-alive\r\n\r\nevent: message_start\r\ndata: {"a":1}\r\n\r\ndata: line one\ndata: line two\n\ndata: é✓\n\ndata: [DONE]\n\n';
    const bytes = Buffer.from(text, 'utf8');
    for (const size of [1, 2, 3, 7, bytes.length]) {
      const reader = new SseReader();
      const events = [];
      for (let i = 0; i < bytes.length; i += size) events.push(...reader.push(bytes.subarray(i, i + size)));
      events.push(...reader.end());
      expect(events).toEqual([
        { event: 'message_start', data: '{"a":1}' },
        { event: null, data: 'line one\nline two' },
        { event: null, data: 'é✓' },
        { event: null, data: '[DONE]' },
      ]);
    }
  });

  it('gives the payloads of a whole stream, whether or not it is written plainly', () => {
    const payloads = ['{"a":1}', '{"b":"x y"}', ''];
    const plain = `${payloads.map((p) => `data: ${p}\n\n`).join('')}data: [DONE]\n\n`;
    expect(ssePayloads(plain)).toEqual(payloads);
    const variants = [
      plain.replaceAll('\n', '\r\n'),
      `: comment\n\n${plain}`,
      `event: chunk\n${plain}`,
      plain.replace('data: {"a":1}', 'data:{"a":1}'),
      plain.slice(0, -2),
    ];
    for (const text of variants) expect(ssePayloads(text), JSON.stringify(text)).toEqual(payloads);
    expect(ssePayloads('data: one\ndata: two\n\n')).toEqual(['one\ntwo']);
  });

  it('returns a last event that lacks its blank line at the end', () => {
    const reader = new SseReader();
    expect(reader.push(Buffer.from('data: {"x":1}'))).toEqual([]);
    expect(reader.end()).toEqual([{ event: null, data: '{"x":1}' }]);
  });
});

describe('stream assembly and cost', () => {
  it('assembles content, tool calls, finish reason and usage from chunks', () => {
    const chunk = (delta: object, finish: string | null = null) =>
      JSON.stringify({
        id: 'c1',
        object: 'chat.completion.chunk',
        created: 5,
        model: 'm',
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
    const completion = assembleCompletion(
      [
        chunk({ role: 'assistant', content: '' }),
        chunk({
          tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'f', arguments: '' } }],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }),
        chunk({}, 'tool_calls'),
        JSON.stringify({
          id: 'c1',
          choices: [],
          usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
        }),
        'not json',
      ],
      'fallback-model',
    );
    expect(completion).toMatchObject({
      id: 'c1',
      model: 'm',
      created: 5,
      choices: [
        {
          message: {
            content: null,
            tool_calls: [{ id: 't1', function: { name: 'f', arguments: '{"a":1}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { total_tokens: 7 },
    });
  });

  it('formats cost as a plain decimal', () => {
    expect(formatCost(0)).toBe('0');
    expect(formatCost(1.2e-7)).toBe('0.00000012');
    expect(formatCost(0.5)).toBe('0.5');
    expect(formatCost(Number.NaN)).toBe('0');
  });
});
