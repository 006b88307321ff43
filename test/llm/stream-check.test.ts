// Database-independent: the stream check is a pure function.
import { describe, expect, it } from 'vitest';
import { eventProblem } from '../../src/llm/stream-check.js';

/** The rule as first written: any control byte but tab, LF and CR is refused before the JSON is read. */
function byScanThenParse(data: string): string | null {
  if (data === '[DONE]') return null;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it looks for
  if (/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(data)) return 'the upstream stream sent control characters';
  try {
    const value: unknown = JSON.parse(data);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return 'the upstream stream sent an event that is not a JSON object';
    }
  } catch {
    return 'the upstream stream sent an event that is not JSON';
  }
  return null;
}

describe('eventProblem (parse first, scan only to name a failure)', () => {
  const cases = [
    '[DONE]',
    '{"choices":[{"delta":{"content":"hi"}}]}',
    '{\t"a" :\r\n 1 }',
    '{"a":"tab\tinside"}',
    '{"a":"bell\x07inside"}',
    '{"a":"del\x7finside"}',
    '{"a":1}\x7f',
    '{"a":1}\x0b',
    '\x01\x02\x03',
    '{"a":}',
    '{not json',
    '[1,2]',
    '"text"',
    '42',
    'null',
    '',
  ];
  for (const data of cases) {
    it(`judges ${JSON.stringify(data)} as the scan-then-parse rule does`, () => {
      const expected = byScanThenParse(data);
      expect(eventProblem(data)).toBe(expected);
    });
  }

  it('names control bytes, DEL included, and lets clean chunks pass', () => {
    expect(eventProblem('{"a":"x\x7fy"}')).toBe('the upstream stream sent control characters');
    expect(eventProblem('{"a":"x\x00y"}')).toBe('the upstream stream sent control characters');
    expect(eventProblem('{"a":"x\\u0000y"}')).toBeNull();
  });
});
