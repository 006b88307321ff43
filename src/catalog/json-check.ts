import { MAX_JSON_DEPTH } from '../http/json-parser.js';

/**
 * Checks that a text is one JSON document that the service would store, without building it. Dataset
 * uploads only need to know that each line is valid: JSON.parse would materialise (and intern) every
 * value of a million-row upload, which costs the V8 heap far more than the rows themselves.
 *
 * Accepts exactly what JSON.parse accepts, minus what the JSON body parser refuses too: nesting deeper
 * than MAX_JSON_DEPTH, `__proto__` keys and `constructor.prototype`, plus what cannot be stored as
 * sent: NUL characters (`\u0000`) and numbers that overflow to Infinity.
 */
export type JsonCheck = { ok: true; kind: 'object' | 'array' | 'scalar' } | { ok: false; error: string };

const OBJECT = 1;
const ARRAY = 2;

const isWs = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHex = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

const PROTO = '__proto__';
const CONSTRUCTOR = 'constructor';
const PROTOTYPE = 'prototype';

// One stack for the whole process: the check is synchronous, so calls never interleave.
const stack = new Uint8Array(MAX_JSON_DEPTH + 2);
/** Per level: the object is the value of a `constructor` key (so a `prototype` key in it is refused). */
const underConstructor = new Uint8Array(MAX_JSON_DEPTH + 2);

/** The characters a backslash may escape in a JSON string, `u` aside. */
const isShortEscape = (e: number) =>
  e === 0x22 ||
  e === 0x5c ||
  e === 0x2f ||
  e === 0x62 ||
  e === 0x66 ||
  e === 0x6e ||
  e === 0x72 ||
  e === 0x74;

/** Where the last `scanNumber` stopped: past the number, or where it found it malformed. */
let numberEnd = 0;

/** Scans the number at `start` (sets `numberEnd`); returns an error, or null. */
function scanNumber(text: string, start: number): string | null {
  let i = start;
  let big = false;
  if (text.charCodeAt(i) === 0x2d) i++;
  if (text.charCodeAt(i) === 0x30) i++;
  else if (isDigit(text.charCodeAt(i))) while (isDigit(text.charCodeAt(i))) i++;
  else {
    numberEnd = i;
    return 'No number after minus sign';
  }
  if (i - start > 300) big = true;
  if (text.charCodeAt(i) === 0x2e) {
    i++;
    if (!isDigit(text.charCodeAt(i))) {
      numberEnd = i;
      return 'Unterminated fractional number';
    }
    while (isDigit(text.charCodeAt(i))) i++;
  }
  const e = text.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    big = true;
    i++;
    const s = text.charCodeAt(i);
    if (s === 0x2b || s === 0x2d) i++;
    if (!isDigit(text.charCodeAt(i))) {
      numberEnd = i;
      return 'Exponent part is missing a number';
    }
    while (isDigit(text.charCodeAt(i))) i++;
  }
  numberEnd = i;
  if (big && !Number.isFinite(Number(text.slice(start, i)))) return 'Numbers must be finite';
  return null;
}

export function checkJson(text: string): JsonCheck {
  const n = text.length;
  let i = 0;
  let depth = 0;
  let first = -1;
  const bad = (error: string): JsonCheck => ({ ok: false, error });
  const unexpected = (): JsonCheck =>
    bad(
      i >= n
        ? 'Unexpected end of JSON input'
        : `Unexpected character ${JSON.stringify(text[i])} at position ${i}`,
    );
  const skipWs = () => {
    while (i < n && isWs(text.charCodeAt(i))) i++;
  };

  /** Scans a string from its opening quote; returns an error, or null. `key` collects short keys. */
  let keyMatch = 0; // bit 1: still equals __proto__, bit 2: constructor, bit 4: prototype
  let keyLength = 0;
  const scanString = (asKey: boolean): string | null => {
    i++; // opening quote
    keyMatch = asKey ? 7 : 0;
    keyLength = 0;
    for (;;) {
      if (i >= n) return 'Unterminated string in JSON';
      let c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return null;
      }
      if (c < 0x20) return `Bad control character in string literal at position ${i}`;
      if (c === 0x5c) {
        const e = text.charCodeAt(i + 1);
        if (e === 0x75) {
          c = 0;
          for (let k = 2; k < 6; k++) {
            const h = text.charCodeAt(i + k);
            if (!isHex(h)) return `Bad Unicode escape at position ${i}`;
            c = c * 16 + (h <= 0x39 ? h - 0x30 : (h | 0x20) - 0x57);
          }
          if (c === 0) return 'Strings must not contain NUL (\\u0000) characters';
          i += 6;
        } else if (isShortEscape(e)) {
          c = e === 0x22 || e === 0x5c || e === 0x2f ? e : 0x20;
          i += 2;
        } else {
          return `Bad escaped character at position ${i}`;
        }
      } else {
        i++;
      }
      if (keyMatch) {
        if (PROTO.charCodeAt(keyLength) !== c) keyMatch &= ~1;
        if (CONSTRUCTOR.charCodeAt(keyLength) !== c) keyMatch &= ~2;
        if (PROTOTYPE.charCodeAt(keyLength) !== c) keyMatch &= ~4;
        keyLength++;
      }
    }
  };
  const keyIs = (bit: number, word: string) => (keyMatch & bit) !== 0 && keyLength === word.length;

  let pendingConstructor = false;
  /** Reads `"key":` at i; refuses prototype-poisoning keys. Returns the failure, or null. */
  const readKey = (): JsonCheck | null => {
    if (text.charCodeAt(i) !== 0x22) return unexpected();
    const err = scanString(true);
    if (err) return bad(err);
    if (keyIs(1, PROTO) || (keyIs(4, PROTOTYPE) && underConstructor[depth])) {
      return bad('Object contains forbidden prototype property');
    }
    pendingConstructor = keyIs(2, CONSTRUCTOR);
    skipWs();
    if (text.charCodeAt(i) !== 0x3a) return unexpected();
    i++;
    return null;
  };
  skipWs();
  for (;;) {
    // A value is expected at i.
    skipWs();
    if (i >= n) return unexpected();
    const c = text.charCodeAt(i);
    if (first === -1) first = c;
    if (c === 0x7b || c === 0x5b) {
      if (depth >= MAX_JSON_DEPTH)
        return { ok: false, error: `JSON nested deeper than ${MAX_JSON_DEPTH} levels` };
      depth++;
      stack[depth] = c === 0x7b ? OBJECT : ARRAY;
      underConstructor[depth] = c === 0x7b && pendingConstructor ? 1 : 0;
      pendingConstructor = false;
      i++;
      skipWs();
      const close = c === 0x7b ? 0x7d : 0x5d;
      if (text.charCodeAt(i) === close) {
        i++;
        depth--;
      } else if (c === 0x7b) {
        const keyError = readKey();
        if (keyError) return keyError;
        continue;
      } else {
        continue;
      }
    } else {
      pendingConstructor = false;
      let err: string | null = null;
      if (c === 0x22) err = scanString(false);
      else if (c === 0x2d || isDigit(c)) {
        err = scanNumber(text, i);
        i = numberEnd;
      } else if (text.startsWith('true', i)) i += 4;
      else if (text.startsWith('false', i)) i += 5;
      else if (text.startsWith('null', i)) i += 4;
      else return unexpected();
      if (err) return bad(err.includes('position') || i >= n ? err : `${err} at position ${i}`);
    }
    // After a complete value: close containers or move to the next element.
    for (;;) {
      skipWs();
      if (depth === 0) {
        if (i < n) return bad(`Unexpected non-whitespace character after JSON at position ${i}`);
        return { ok: true, kind: first === 0x7b ? 'object' : first === 0x5b ? 'array' : 'scalar' };
      }
      const ch = text.charCodeAt(i);
      const inObject = stack[depth] === OBJECT;
      if (ch === (inObject ? 0x7d : 0x5d)) {
        i++;
        depth--;
        continue;
      }
      if (ch !== 0x2c) return unexpected();
      i++;
      if (inObject) {
        skipWs();
        const keyError = readKey();
        if (keyError) return keyError;
      }
      break;
    }
  }
}
