// Database-independent: the JSON and JSON-lines checks are pure functions.
import { describe, expect, it } from 'vitest';
import { checkJson } from '../../src/catalog/json-check.js';
import { parseLine } from '../../src/catalog/json-lines.js';
import { seeded } from '../helpers/random.js';

/** The reference: JSON.parse plus the service's rules (secure-json-parse, depth, NUL, finite numbers). */
const reference = (text: string) => !('error' in parseLine(text));

const ITERATIONS = Number(process.env.JSON_CHECK_ITERATIONS ?? 20_000);
const { random, int, pick } = seeded(0xc0ffee);

const KEYS = ['a', 'input', 'expected', '__proto__', 'constructor', 'prototype', 'é', '\u005f', 'k"q', ''];
const STRINGS = [
  '',
  'x',
  'line\nbreak',
  'tab\t',
  'quote"',
  'back\\slash',
  '\u0000',
  '\u0001',
  'ü🚀',
  '\ud800',
];
const NUMBERS = [0, -0, 1, -1, 0.5, 1e21, 1e-7, 123456789, 2 ** 53, -1.5e300];

function value(depth: number): unknown {
  switch (int(depth > 4 ? 4 : 7)) {
    case 0:
      return pick(STRINGS);
    case 1:
      return pick(NUMBERS);
    case 2:
      return pick([true, false, null]);
    case 3:
      return int(1000);
    case 4:
    case 5:
      return Array.from({ length: int(4) }, () => value(depth + 1));
    default:
      // Distinct keys: with duplicates JSON.parse keeps the last, which may hide a __proto__ key that
      // checkJson (reading the text, not the result) refuses, on the safe side.
      return Object.fromEntries(
        [...new Set(Array.from({ length: int(4) }, () => pick(KEYS)))].map((k) => [k, value(depth + 1)]),
      );
  }
}

const spaced = (text: string) => text.replace(/[,:[\]{}]/g, (c) => (random() < 0.2 ? ` ${c}\t` : c));

const MUTATIONS = [
  '"',
  '\\',
  '{',
  '}',
  '[',
  ']',
  ',',
  ':',
  ' ',
  '0',
  '-',
  '.',
  'e',
  'E',
  '+',
  'u',
  'x',
  '\u0000',
  '\n',
];

function mutate(text: string): string {
  const at = int(text.length + 1);
  switch (int(3)) {
    case 0:
      return text.slice(0, at) + text.slice(at + 1);
    case 1:
      return text.slice(0, at) + pick(MUTATIONS) + text.slice(at);
    default:
      return text.slice(0, at) + pick(MUTATIONS) + text.slice(at + 1);
  }
}

describe('checkJson', () => {
  it('agrees with JSON.parse and the service rules on hand-picked cases', () => {
    const cases = [
      '{}',
      '[]',
      '{"a":1}',
      ' { "a" : [ 1 , 2 , { "b" : null } ] } ',
      '"text"',
      '0',
      '-0.5e-3',
      '01',
      '1.',
      '.5',
      '-',
      '1e',
      '1e+',
      '1e400',
      '-1e400',
      `1${'0'.repeat(400)}`,
      `1${'0'.repeat(305)}.5`,
      'true',
      'tru',
      'nul',
      '{"a":1,}',
      '[1,]',
      '{"a" 1}',
      '{a:1}',
      "{'a':1}",
      '{"a":"\\u0000"}',
      '{"\\u0000":1}',
      '{"a":"\\u00zz"}',
      '{"a":"\\x41"}',
      '{"a":"\\ud800"}',
      '{"a":"\u0007"}',
      '{"__proto__":{"x":1}}',
      '{"\\u005f_proto__":{}}',
      '{"__proto__x":1}',
      '{"constructor":{"prototype":{}}}',
      '{"constructor":{"x":{"prototype":1}}}',
      '{"constructor":1,"prototype":2}',
      '{"constructor":[{"prototype":1}]}',
      '{"a":1}{"b":2}',
      '{"a":1} x',
      '\u00a0{}',
      '{"a":1',
      '"abc',
      'NaN',
      'Infinity',
      `${'['.repeat(64)}${']'.repeat(64)}`,
      `${'['.repeat(65)}${']'.repeat(65)}`,
      `${'{"a":'.repeat(64)}1${'}'.repeat(64)}`,
      `${'{"a":'.repeat(65)}1${'}'.repeat(65)}`,
    ];
    for (const text of cases) expect(checkJson(text).ok, text.slice(0, 80)).toBe(reference(text));
  });

  it('agrees with the reference on many generated and mutated documents', () => {
    let accepted = 0;
    for (let k = 0; k < ITERATIONS; k++) {
      const base = spaced(JSON.stringify(value(0)) ?? 'null');
      const text = k % 2 ? mutate(base) : base;
      const expected = reference(text);
      const got = checkJson(text);
      // The one allowed difference, on the safe side: a refused key or value hidden by a later duplicate
      // key (JSON.parse keeps the last value; checkJson refuses what the text says). Syntax must agree.
      const stricter = !got.ok && expected && /forbidden prototype|NUL|finite|nested/.test(got.error);
      if (got.ok !== expected && !stricter)
        throw new Error(`disagreement on ${JSON.stringify(text)}: checkJson ${got.ok}`);
      if (stricter) continue;
      if (got.ok) {
        accepted++;
        const parsed = JSON.parse(text);
        const kind = Array.isArray(parsed)
          ? 'array'
          : parsed !== null && typeof parsed === 'object'
            ? 'object'
            : 'scalar';
        expect(got.kind).toBe(kind);
      } else {
        expect(got.error).toMatch(/\S/);
      }
    }
    expect(accepted).toBeGreaterThan(5_000);
  });
});
