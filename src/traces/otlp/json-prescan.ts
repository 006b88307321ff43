import { Budget, type OtlpLimits, type OtlpSignal } from './limits.js';

/*
 * An OTLP/JSON body counted against the limits as text, before it is parsed: a request built to cost a
 * parser far more than its size (hundreds of thousands of attributes in one list, which JSON.parse turns
 * into as many objects, hundreds of milliseconds of a decode thread each time) is refused in one pass
 * over its characters instead, with the answer the walk of the parsed request would give. The pass only
 * refuses what that walk would certainly refuse: lists under the keys the walk bounds (`attributes`,
 * `events`, `links`, the spans or log records), and nesting deeper than any request within the depth
 * limit can reach. Everything else, and malformed JSON, is left to the parser and the walk.
 */

/** JSON nesting past which an attribute value is certainly nested past `maxDepth` (four levels a step). */
const depthBound = (limits: OtlpLimits) => 16 + 4 * (limits.maxDepth + 1);

/** Keys longer than this are never one of the bounded keys: not kept. */
const KEY_CHARS = 16;

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const COMMA = 44;
const COLON = 58;

interface Frame {
  array: boolean;
  /** The key the container is the value of (null: an array element, or a long key). */
  key: string | null;
  /** Elements of an array seen so far. */
  count: number;
  /** In an object: the next string is a key. */
  keyNext: boolean;
}

/** The index just past the string that starts at `at` (a quote); -1 when it never ends. */
function stringEnd(text: string, at: number): number {
  let i = at + 1;
  for (;;) {
    const q = text.indexOf('"', i);
    if (q === -1) return -1;
    let slashes = 0;
    for (let j = q - 1; j > at && text.charCodeAt(j) === BACKSLASH; j--) slashes++;
    if (slashes % 2 === 0) return q + 1;
    i = q + 1;
  }
}

/** Throws OtlpLimitError, as the walk of the parsed request would, for a list past its limit. */
export function prescanJsonText(text: string, signal: OtlpSignal, limits: OtlpLimits): void {
  const budget = new Budget(limits, signal);
  const leaves = signal === 'spans' ? 'spans' : 'logRecords';
  const deepest = depthBound(limits);
  const stack: Frame[] = [];
  let pendingKey: string | null = null;

  /** One more element in the array on top: counted against its key's limit. */
  const element = (frame: Frame) => {
    frame.count++;
    if (frame.key === 'attributes') budget.value(frame.count, false);
    else if (frame.key === 'events' || frame.key === 'links') budget.event(frame.count, frame.key);
    else if (frame.key === leaves) budget.item();
  };
  /** A value starts here: the first element of an array on top is counted. */
  const valueStarts = () => {
    const top = stack[stack.length - 1];
    if (top?.array && top.count === 0) element(top);
  };

  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (end === -1) return;
      const top = stack[stack.length - 1];
      if (top && !top.array && top.keyNext) {
        top.keyNext = false;
        pendingKey = end - i - 2 <= KEY_CHARS ? text.slice(i + 1, end - 1) : null;
      } else valueStarts();
      i = end - 1;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      valueStarts();
      const top = stack[stack.length - 1];
      const key = top && !top.array ? pendingKey : null;
      stack.push({ array: c === OPEN_ARRAY, key, count: 0, keyNext: c === OPEN_OBJECT });
      if (stack.length > deepest) budget.depth(limits.maxDepth + 1);
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (stack.pop() === undefined) return;
    } else if (c === COMMA) {
      const top = stack[stack.length - 1];
      if (!top) return;
      if (top.array) element(top);
      else top.keyNext = true;
    } else if (c !== COLON && c !== 32 && c !== 10 && c !== 13 && c !== 9) {
      // A number or a literal: its first character starts a value.
      valueStarts();
      while (i + 1 < text.length) {
        const n = text.charCodeAt(i + 1);
        if (
          n === COMMA ||
          n === CLOSE_ARRAY ||
          n === CLOSE_OBJECT ||
          n === 32 ||
          n === 10 ||
          n === 13 ||
          n === 9
        )
          break;
        i++;
      }
    }
  }
}
