import { describe, expect, it } from 'vitest';
import { prescanJsonText } from '../../src/traces/otlp/json-prescan.js';
import { DEFAULT_OTLP_LIMITS, OtlpLimitError, scanJson } from '../../src/traces/otlp/limits.js';
import { manyAttributesJson } from './bombs.js';

// OTLP/JSON counted as text before it is parsed: no server and no database, so it runs once, in the SQLite
// project.

const limits = { ...DEFAULT_OTLP_LIMITS, maxAttributes: 4, maxEvents: 2, maxItems: 3, maxDepth: 2 };

const attribute = (key: string, value: unknown = { stringValue: 'x' }) => ({ key, value });
const span = (extra: Record<string, unknown> = {}) => ({
  traceId: '5b8efff798038103d269b633813fc60c',
  spanId: 'eee19b7ec3c1b174',
  name: 'a "quoted" name with [brackets] and {braces}, "attributes": [1,2,3,4,5,6]',
  attributes: [attribute('a'), attribute('b')],
  ...extra,
});
const request = (spans: unknown[], resourceAttributes: unknown[] = []) => ({
  resourceSpans: [
    { resource: { attributes: resourceAttributes }, scopeSpans: [{ scope: { name: 's' }, spans }] },
  ],
});

/** What the walk of the parsed request says of it: null when it is within the limits, else its message. */
function walked(body: unknown): string | null {
  try {
    scanJson(body, 'spans', limits);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
function prescanned(text: string): string | null {
  try {
    prescanJsonText(text, 'spans', limits);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(OtlpLimitError);
    return (err as Error).message;
  }
}

describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('OTLP/JSON counted as text', () => {
  it('passes what the walk passes: escaped quotes, brackets and keys inside strings are text', () => {
    const nested = { arrayValue: { values: [{ kvlistValue: { values: [attribute('k')] } }] } };
    const bodies = [
      request([span(), span({ events: [{ name: 'e', attributes: [attribute('x')] }] })]),
      request([span({ attributes: [attribute('a', nested), attribute('b', { intValue: '12' })] })]),
      request([span({ attributes: [attribute('\\"attributes\\"'), attribute('tab\there')] })]),
      request([]),
    ];
    for (const body of bodies) {
      expect(walked(body)).toBeNull();
      expect(prescanned(JSON.stringify(body))).toBeNull();
      expect(prescanned(JSON.stringify(body, null, 2))).toBeNull();
    }
  });

  it('refuses what the walk refuses, with its message: attributes, events, spans', () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => attribute(`k${i}`));
    const bodies = [
      request([span({ attributes: many(5) })]),
      request([span()], many(5)),
      request([span({ events: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] })]),
      request([span({ links: [{ traceId: 't' }, { traceId: 't' }, { traceId: 't' }] })]),
      request([span(), span(), span(), span()]),
    ];
    for (const body of bodies) {
      const message = walked(body);
      expect(message).toMatch(/^The export request has too many/);
      expect(prescanned(JSON.stringify(body))).toBe(message);
      expect(prescanned(JSON.stringify(body, null, 1))).toBe(message);
    }
  });

  it('refuses nesting no request within the depth limit reaches, and leaves malformed JSON to the parser', () => {
    const deep = `{"resourceSpans":${'['.repeat(200)}${']'.repeat(200)}}`;
    expect(prescanned(deep)).toMatch(/nested too deep/);
    for (const text of ['', '{', '{"resourceSpans":[}', ']]]', '{"a":"never closed'])
      expect(prescanned(text)).toBeNull();
  });

  it('refuses the 8.8 MB bomb of 400,000 attributes within milliseconds, past the default limits', () => {
    const text = manyAttributesJson(400_000);
    const t0 = performance.now();
    expect(() => prescanJsonText(text, 'spans', DEFAULT_OTLP_LIMITS)).toThrow(
      /too many attributes in one list/,
    );
    expect(performance.now() - t0).toBeLessThan(100);
  });
});
