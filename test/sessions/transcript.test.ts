// Database-independent: a session's transcript is computed from the task logs handed in.
import { describe, expect, it } from 'vitest';
import {
  conversationText,
  type SessionLog,
  trajectoryText,
  transcriptOf,
} from '../../src/sessions/transcript.js';

let seq = 0;
function log(input: unknown[], response: unknown, over: Partial<SessionLog> = {}): SessionLog {
  seq += 1;
  return {
    id: `log_${seq}`,
    model: 'm',
    input,
    response,
    output: null,
    status: 'success',
    error: null,
    usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
    cost: 0.001,
    latency_ms: 50,
    created_at: `2031-01-01T00:00:0${seq % 10}.000Z`,
    ...over,
  };
}
const answer = (message: object) => ({ choices: [{ index: 0, message: { role: 'assistant', ...message } }] });

const system = { role: 'system', content: 'You help with weather.' };
const user = { role: 'user', content: 'Weather in Paris?' };
const call = { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } };
const asked = { role: 'assistant', content: null, tool_calls: [call] };
const result = { role: 'tool', tool_call_id: 'call_1', content: 'sunny, 21 C' };

describe('transcriptOf', () => {
  const first = log([system, user], answer({ content: null, tool_calls: [call] }));
  const second = log([system, user, asked, result], answer({ content: 'Sunny and 21 C.' }));
  const t = transcriptOf([first, second]);

  it("shows each call's new input only, and its answer", () => {
    expect(t.turns.map((x) => x.input)).toEqual([
      [
        { role: 'system', content: 'You help with weather.' },
        { role: 'user', content: 'Weather in Paris?' },
      ],
      [{ role: 'tool', content: 'sunny, 21 C', tool_call_id: 'call_1' }],
    ]);
    expect(t.turns[0]!.output).toEqual({
      content: null,
      tool_calls: [{ id: 'call_1', name: 'weather', arguments: { city: 'Paris' } }],
    });
    expect(t.turns[1]!.output).toEqual({ content: 'Sunny and 21 C.', tool_calls: [] });
    expect(t.turns.map((x) => [x.index, x.task_log_id, x.cost])).toEqual([
      [0, first.id, 0.001],
      [1, second.id, 0.001],
    ]);
  });

  it('joins each tool call with the result a later call sent, and the turn that made it', () => {
    expect(t.tool_calls).toEqual([
      { id: 'call_1', name: 'weather', arguments: { city: 'Paris' }, result: 'sunny, 21 C', turn: 0 },
    ]);
    expect(trajectoryText(t)).toBe('1. weather({"city":"Paris"}) -> sunny, 21 C');
  });

  it('writes the whole conversation once, as a judge reads it', () => {
    expect(conversationText(t)).toBe(
      [
        'system: You help with weather.',
        'user: Weather in Paris?',
        'assistant called weather({"city":"Paris"})',
        'tool result: sunny, 21 C',
        'assistant: Sunny and 21 C.',
      ].join('\n'),
    );
  });

  it('shows the whole input of a call that does not continue the conversation, and numbers from first', () => {
    const branch = log([{ role: 'user', content: 'And in Rome?' }], answer({ content: 'Rainy.' }));
    const b = transcriptOf([first, branch], 4);
    expect(b.turns.map((x) => x.index)).toEqual([4, 5]);
    expect(b.turns[1]!.input).toEqual([{ role: 'user', content: 'And in Rome?' }]);
    expect(b.tool_calls[0]).toMatchObject({ result: null, turn: 4 });
    expect(trajectoryText(b)).toBe('1. weather({"city":"Paris"}) -> (no result)');
  });

  it("keeps a failed call's error, with no answer", () => {
    const failed = log([user], null, { status: 'error', error: { code: 'upstream_unavailable' } });
    const f = transcriptOf([failed]);
    expect(f.turns[0]).toMatchObject({
      status: 'error',
      error: { code: 'upstream_unavailable' },
      output: { content: null, tool_calls: [] },
    });
  });
});
