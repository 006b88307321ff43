// Database-independent: which answers the cache may keep is decided on the answer alone.
import { describe, expect, it } from 'vitest';
import { storableAnswer, storableStream } from '../../src/llm/cache/storable.js';

const completion = {
  id: 'c1',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
};

describe('storableAnswer', () => {
  it('keeps a successful chat completion', () => {
    expect(storableAnswer('chat', completion)).toBe(true);
  });

  it('keeps nothing that carries an error, whatever else it holds', () => {
    expect(storableAnswer('chat', { ...completion, error: { message: 'overloaded' } })).toBe(false);
    expect(storableAnswer('chat', { ...completion, error: null })).toBe(true);
  });

  it('keeps no chat answer without choices, with none, or with a choice without a message', () => {
    expect(storableAnswer('chat', {})).toBe(false);
    expect(storableAnswer('chat', { choices: [] })).toBe(false);
    expect(storableAnswer('chat', { choices: [{ index: 0, finish_reason: 'stop' }] })).toBe(false);
  });
});

describe('storableStream', () => {
  const chunk = (delta: object, finish: string | null = null) =>
    JSON.stringify({
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta, finish_reason: finish }],
    });

  it('keeps a stream that ended with a finish reason', () => {
    expect(storableStream([chunk({ role: 'assistant' }), chunk({ content: 'hi' }), chunk({}, 'stop')])).toBe(
      true,
    );
    // A usage-only chunk (no choices) after the finish is fine.
    expect(
      storableStream([chunk({ content: 'hi' }, 'length'), JSON.stringify({ choices: [], usage: {} })]),
    ).toBe(true);
  });

  it('keeps no stream that never said it finished, or had no chunk with choices', () => {
    expect(storableStream([chunk({ content: 'hi' })])).toBe(false);
    expect(storableStream([chunk({ content: 'hi' }, '')])).toBe(false);
    expect(storableStream([])).toBe(false);
    expect(storableStream([JSON.stringify({ usage: { total_tokens: 3 } })])).toBe(false);
  });

  it('keeps no stream with an error event, an unreadable payload or a malformed choice', () => {
    expect(
      storableStream([chunk({ content: 'hi' }, 'stop'), JSON.stringify({ error: { message: 'x' } })]),
    ).toBe(false);
    expect(storableStream([chunk({ content: 'hi' }, 'stop'), '{not json'])).toBe(false);
    expect(storableStream([JSON.stringify({ choices: ['x'] }), chunk({}, 'stop')])).toBe(false);
    expect(storableStream(['"a string"', chunk({}, 'stop')])).toBe(false);
  });
});
