// Database-independent: reading a chat completion's answer is a pure function.
import { describe, expect, it } from 'vitest';
import { chatAnswer } from '../../src/shared/chat-answer.js';

describe('chatAnswer', () => {
  it("reads the first choice's message, text, tool calls and finish reason", () => {
    const message = {
      role: 'assistant',
      content: 'it is sunny',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
      ],
    };
    expect(
      chatAnswer({
        choices: [
          { index: 0, message, finish_reason: 'tool_calls' },
          { index: 1, message: { role: 'assistant', content: 'second' }, finish_reason: 'stop' },
        ],
      }),
    ).toEqual({
      message,
      text: 'it is sunny',
      toolCalls: [{ id: 'call_1', name: 'weather', arguments: '{"city":"Paris"}' }],
      finishReason: 'tool_calls',
      refusal: null,
    });
  });

  it('joins text parts and writes object arguments as JSON', () => {
    const answer = chatAnswer({
      choices: [
        {
          message: {
            content: [{ type: 'text', text: 'a' }, { type: 'image_url' }, { type: 'text', text: 'b' }],
            tool_calls: [
              { function: { name: 'f', arguments: { x: 1 } } },
              { function: { name: 'g' } },
              'junk',
            ],
          },
        },
      ],
    });
    expect(answer.text).toBe('ab');
    expect(answer.toolCalls).toEqual([
      { id: null, name: 'f', arguments: '{"x":1}' },
      { id: null, name: 'g', arguments: '' },
    ]);
    expect(answer.finishReason).toBeNull();
  });

  it('keeps a non-empty refusal only', () => {
    expect(chatAnswer({ choices: [{ message: { content: null, refusal: 'no' } }] }).refusal).toBe('no');
    expect(chatAnswer({ choices: [{ message: { content: 'x', refusal: '' } }] }).refusal).toBeNull();
  });

  it('answers an empty answer for bodies that are not completions', () => {
    const empty = { message: null, text: '', toolCalls: [], finishReason: null, refusal: null };
    for (const body of [null, 'text', 42, {}, { choices: 'x' }, { choices: [] }, { choices: [null] }]) {
      expect(chatAnswer(body)).toEqual(empty);
    }
    expect(chatAnswer({ choices: [{ finish_reason: 'length' }] })).toEqual({
      ...empty,
      finishReason: 'length',
    });
  });
});
