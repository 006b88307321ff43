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

describe('transcriptOf across a handoff', () => {
  const triage = { role: 'system', content: 'You triage.' };
  const refunds = { role: 'system', content: 'You issue refunds.' };
  const billing = { role: 'system', content: 'You bill.' };
  const ask = { role: 'user', content: 'Refund order A1.' };
  const toolCall = (id: string, name: string, args: object) => ({
    id,
    type: 'function',
    function: { name, arguments: JSON.stringify(args) },
  });
  const lookup = toolCall('call_l', 'lookup_order', { order: 'A1' });
  const transfer = toolCall('call_t', 'transfer_to_refunds', {});
  const transfer2 = toolCall('call_t2', 'transfer_to_billing', {});
  const said = (c: object) => ({ role: 'assistant', content: null, tool_calls: [c] });
  const res = (id: string, content: string) => ({ role: 'tool', tool_call_id: id, content });
  const h1 = [
    ask,
    said(lookup),
    res('call_l', 'paid'),
    said(transfer),
    res('call_t', '{"assistant":"refunds"}'),
  ];
  const h2 = [...h1, said(transfer2), res('call_t2', 'moved')];
  const logs = [
    log([triage, ask], answer({ content: null, tool_calls: [lookup] })),
    log(
      [triage, ask, said(lookup), res('call_l', 'paid')],
      answer({ content: null, tool_calls: [transfer] }),
    ),
    log([refunds, ...h1], answer({ content: null, tool_calls: [transfer2] })),
    log([billing, ...h2], answer({ content: 'Refunded.' })),
  ];
  const t = transcriptOf(logs);

  it('adds only the new system prompt and the transfer result at a handoff, and marks it', () => {
    expect(t.turns.map((x) => x.input)).toEqual([
      [
        { role: 'system', content: 'You triage.' },
        { role: 'user', content: 'Refund order A1.' },
      ],
      [{ role: 'tool', content: 'paid', tool_call_id: 'call_l' }],
      [
        { role: 'system', content: 'You issue refunds.' },
        { role: 'tool', content: '{"assistant":"refunds"}', tool_call_id: 'call_t' },
      ],
      [
        { role: 'system', content: 'You bill.' },
        { role: 'tool', content: 'moved', tool_call_id: 'call_t2' },
      ],
    ]);
    // The second handoff names the agent before it, as the first one named it; its result is not JSON,
    // so the tool's name says where it went.
    expect(t.turns.map((x) => x.handoff)).toEqual([
      null,
      null,
      { from: null, to: 'refunds', tool: 'transfer_to_refunds', tool_call_id: 'call_t' },
      { from: 'refunds', to: 'billing', tool: 'transfer_to_billing', tool_call_id: 'call_t2' },
    ]);
    expect(t.tool_calls.map((c) => [c.name, c.result, c.turn])).toEqual([
      ['lookup_order', 'paid', 0],
      ['transfer_to_refunds', '{"assistant":"refunds"}', 1],
      ['transfer_to_billing', 'moved', 2],
    ]);
  });

  it('gives a judge each message once', () => {
    const text = conversationText(t);
    expect(text.split('user: Refund order A1.')).toHaveLength(2);
    expect(text.split('tool result: paid')).toHaveLength(2);
    expect(text).toContain('system: You issue refunds.\ntool result: {"assistant":"refunds"}');
  });

  it("shows a first turn's earlier calls with their results (a page, or a conversation begun elsewhere)", () => {
    const page = transcriptOf(logs.slice(2), 2);
    expect(page.turns[0]!.input).toEqual([
      { role: 'system', content: 'You issue refunds.' },
      { role: 'user', content: 'Refund order A1.' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'call_l', name: 'lookup_order', arguments: { order: 'A1' } }],
      },
      { role: 'tool', content: 'paid', tool_call_id: 'call_l' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'call_t', name: 'transfer_to_refunds', arguments: {} }],
      },
      { role: 'tool', content: '{"assistant":"refunds"}', tool_call_id: 'call_t' },
    ]);
    expect(page.turns.map((x) => x.handoff)).toEqual([
      null,
      { from: null, to: 'billing', tool: 'transfer_to_billing', tool_call_id: 'call_t2' },
    ]);
    expect(conversationText(page)).toContain(
      'assistant called lookup_order({"order":"A1"})\ntool result: paid',
    );
  });

  it('marks no handoff where the prompt stays, nor where another conversation begins', () => {
    const branch = log([billing, { role: 'user', content: 'Other question' }], answer({ content: 'Sure.' }));
    const b = transcriptOf([logs[0]!, logs[1]!, branch]);
    expect(b.turns.map((x) => x.handoff)).toEqual([null, null, null]);
    expect(b.turns[2]!.input).toEqual([
      { role: 'system', content: 'You bill.' },
      { role: 'user', content: 'Other question' },
    ]);
  });
});
