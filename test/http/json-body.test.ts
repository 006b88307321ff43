// Database-independent: reading a JSON request body is a pure function of its bytes.
import { describe, expect, it } from 'vitest';
import { bodyText, MAX_JSON_DEPTH, parseJsonBody } from '../../src/http/json-parser.js';
import { ApiError } from '../../src/shared/errors.js';

function refusal(f: () => unknown): ApiError {
  try {
    f();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError');
}

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('parseJsonBody', () => {
  it('parses a JSON document', () => {
    expect(parseJsonBody('{"a":[1,{"b":null}]}')).toEqual({ a: [1, { b: null }] });
    expect(parseJsonBody(' 3 ')).toBe(3);
  });

  it('refuses an empty body and invalid JSON with invalid_json (400)', () => {
    const empty = refusal(() => parseJsonBody('  \n'));
    expect(empty.code).toBe('invalid_json');
    expect(empty.status).toBe(400);
    expect(empty.message).toBe('Request body is empty; send a JSON document');
    expect(refusal(() => parseJsonBody('{"a":')).message).toMatch(/^Request body is not valid JSON: /);
  });

  it('refuses __proto__ and constructor.prototype keys', () => {
    expect(refusal(() => parseJsonBody('{"__proto__":{"admin":true}}')).code).toBe('invalid_json');
    expect(refusal(() => parseJsonBody('{"constructor":{"prototype":{"x":1}}}')).code).toBe('invalid_json');
  });

  it(`accepts ${MAX_JSON_DEPTH} levels of nesting and refuses one more`, () => {
    expect(() => parseJsonBody(nested(MAX_JSON_DEPTH))).not.toThrow();
    expect(refusal(() => parseJsonBody(nested(MAX_JSON_DEPTH + 1))).message).toBe(
      `JSON nested deeper than ${MAX_JSON_DEPTH} levels`,
    );
    const deepObject = `${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}1${'}'.repeat(MAX_JSON_DEPTH + 1)}`;
    expect(refusal(() => parseJsonBody(deepObject)).code).toBe('invalid_json');
  });
});

describe('bodyText', () => {
  it('reads UTF-8 as sent and refuses other bytes rather than replacing them', () => {
    expect(bodyText(Buffer.from('{"t":"ꙮ €"}'))).toBe('{"t":"ꙮ €"}');
    const bad = refusal(() => bodyText(Buffer.from([0x7b, 0xff, 0x7d])));
    expect(bad.code).toBe('invalid_json');
    expect(bad.message).toBe('Request body is not valid UTF-8');
  });
});
