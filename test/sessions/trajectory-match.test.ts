// Database-independent: trajectory matching is a pure function.
import { describe, expect, it } from 'vitest';
import {
  checkLength,
  matchToolCalls,
  type ToolCallLike,
  toolCallsOf,
} from '../../src/scoring/trajectory/match.js';

const call = (name: string, args: Record<string, unknown> = {}): ToolCallLike => ({ name, arguments: args });

// Expected: search(q=paris) → weather(city=Paris) → book(city=Paris).
const expected = [
  call('search', { q: 'paris' }),
  call('weather', { city: 'Paris' }),
  call('book', { city: 'Paris' }),
];

describe('tool_call_match: precision, recall and pass per mode (hand-computed)', () => {
  // Actual: weather, search, book, log — all three expected calls, out of order, plus one extra.
  const actual = [
    call('weather', { city: 'Paris' }),
    call('search', { q: 'paris' }),
    call('book', { city: 'Paris' }),
    call('log'),
  ];

  it('exact: in order, nothing else (longest in-order match is 2 of 4 actual, 2 of 3 expected)', () => {
    expect(matchToolCalls(actual, expected, { mode: 'exact', arguments: 'exact' })).toMatchObject({
      matched: 2,
      precision: 2 / 4,
      recall: 2 / 3,
      pass: false,
    });
    expect(matchToolCalls(expected, expected, { mode: 'exact', arguments: 'exact' })).toMatchObject({
      precision: 1,
      recall: 1,
      pass: true,
    });
  });

  it('in_order: every expected call in order, extras allowed between', () => {
    expect(matchToolCalls(actual, expected, { mode: 'in_order', arguments: 'exact' })).toMatchObject({
      matched: 2,
      recall: 2 / 3,
      pass: false,
    });
    const between = [expected[0]!, call('log'), expected[1]!, expected[2]!];
    expect(matchToolCalls(between, expected, { mode: 'in_order', arguments: 'exact' })).toMatchObject({
      matched: 3,
      precision: 3 / 4,
      recall: 1,
      pass: true,
    });
  });

  it('any_order: the same calls in any order, nothing else', () => {
    expect(matchToolCalls(actual, expected, { mode: 'any_order', arguments: 'exact' })).toMatchObject({
      matched: 3,
      precision: 3 / 4,
      recall: 1,
      pass: false,
    });
    expect(matchToolCalls(actual.slice(0, 3), expected, { mode: 'any_order', arguments: 'exact' }).pass).toBe(
      true,
    );
  });

  it('superset: every expected call made; subset: nothing unexpected made', () => {
    expect(matchToolCalls(actual, expected, { mode: 'superset', arguments: 'exact' })).toMatchObject({
      precision: 3 / 4,
      recall: 1,
      pass: true,
    });
    expect(matchToolCalls(actual, expected, { mode: 'subset', arguments: 'exact' }).pass).toBe(false);
    const fewer = [call('book', { city: 'Paris' })];
    expect(matchToolCalls(fewer, expected, { mode: 'subset', arguments: 'exact' })).toMatchObject({
      precision: 1,
      recall: 1 / 3,
      pass: true,
    });
  });

  it('compares arguments exactly, as a subset, by JSON schema, or not at all', () => {
    const more = [call('weather', { city: 'Paris', units: 'metric' })];
    const want = [call('weather', { city: 'Paris' })];
    expect(matchToolCalls(more, want, { mode: 'exact', arguments: 'exact' }).recall).toBe(0);
    expect(matchToolCalls(more, want, { mode: 'exact', arguments: 'subset' }).recall).toBe(1);
    const schema = [
      call('weather', {
        type: 'object',
        required: ['city'],
        properties: { city: { type: 'string', pattern: '^P' } },
      }),
    ];
    expect(matchToolCalls(more, schema, { mode: 'exact', arguments: 'schema' }).pass).toBe(true);
    expect(
      matchToolCalls([call('weather', { city: 'Oslo' })], schema, { mode: 'exact', arguments: 'schema' })
        .pass,
    ).toBe(false);
    expect(
      matchToolCalls([call('weather', { city: 'Oslo' })], want, { mode: 'exact', arguments: 'ignore' }).pass,
    ).toBe(true);
    // Arguments as JSON text (as models send them) compare by value, whatever the spacing.
    expect(
      matchToolCalls([{ name: 'weather', arguments: '{ "city" : "Paris" }' }], want, {
        mode: 'exact',
        arguments: 'exact',
      }).pass,
    ).toBe(true);
  });

  it('counts empty trajectories as precise and complete', () => {
    expect(matchToolCalls([], [], { mode: 'exact', arguments: 'exact' })).toMatchObject({
      precision: 1,
      recall: 1,
      pass: true,
    });
    expect(matchToolCalls([], expected, { mode: 'superset', arguments: 'exact' })).toMatchObject({
      precision: 1,
      recall: 0,
      pass: false,
    });
  });
});

describe('trajectory_length and reading expected calls', () => {
  it('checks bounds inclusively', () => {
    expect(checkLength(3, { count: 'turns', min: 1, max: 3 }).pass).toBe(true);
    expect(checkLength(4, { count: 'turns', max: 3 }).pass).toBe(false);
    expect(checkLength(0, { count: 'tool_calls', min: 1 }).pass).toBe(false);
  });

  it('reads {name, arguments} and OpenAI tool_calls shapes, refuses others', () => {
    expect(toolCallsOf([{ name: 'a', arguments: { x: 1 } }])).toEqual([{ name: 'a', arguments: { x: 1 } }]);
    expect(toolCallsOf([{ id: 'c1', type: 'function', function: { name: 'a', arguments: '{}' } }])).toEqual([
      { name: 'a', arguments: '{}' },
    ]);
    expect(toolCallsOf('nope')).toBeNull();
    expect(toolCallsOf([{ arguments: {} }])).toBeNull();
  });
});
