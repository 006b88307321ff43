import fs from 'node:fs';
import { csvRecords } from '../shared/csv.js';
import { usage } from './client-context.js';

/**
 * Dataset files read as a stream of rows, never whole: CSV (the header row names the fields) and JSON
 * arrays (split element by element). `read` counts the file's bytes as they are read, for progress.
 */

export type Row = Record<string, unknown>;

export interface FileRows {
  rows: AsyncIterable<Row>;
  /** Bytes of the file read so far. */
  read(): number;
}

function counted(path: string): { stream: fs.ReadStream; read: () => number } {
  const stream = fs.createReadStream(path, { highWaterMark: 256 * 1024 });
  let bytes = 0;
  stream.on('data', (chunk) => {
    bytes += chunk.length;
  });
  return { stream, read: () => bytes };
}

/** CSV rows as objects of strings, keyed by the header row (the server reads CSV uploads the same way). */
export function csvRows(path: string): FileRows {
  const { stream, read } = counted(path);
  async function* rows(): AsyncGenerator<Row> {
    try {
      yield* csvRecords(stream);
    } catch (err) {
      throw usage(`${path}: ${(err as Error).message}`);
    }
  }
  return { rows: rows(), read };
}

/** The elements of a top-level JSON array, one at a time (each must be an object). */
export function jsonArrayRows(path: string): FileRows {
  const { stream, read } = counted(path);
  stream.setEncoding('utf8');
  async function* rows(): AsyncGenerator<Row> {
    let index = 0;
    for await (const text of splitJsonArray(stream as AsyncIterable<string>, path)) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (err) {
        throw usage(`${path}: element ${index} is not valid JSON: ${(err as Error).message}`);
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw usage(`${path}: element ${index} is not an object`);
      }
      index += 1;
      yield value as Row;
    }
  }
  return { rows: rows(), read };
}

const QUOTE = 34; // "
const BACKSLASH = 92;
const COMMA = 44;
const OPEN_BRACE = 123; // {
const CLOSE_BRACE = 125; // }
const OPEN_BRACKET = 91; // [
const CLOSE_BRACKET = 93; // ]
const BOM = 0xfeff;

const isOpen = (c: number) => c === OPEN_BRACE || c === OPEN_BRACKET;
const isClose = (c: number) => c === CLOSE_BRACE || c === CLOSE_BRACKET;
const isSpace = (c: number) => c === 32 || c === 10 || c === 13 || c === 9;

/**
 * Splits the text of a JSON array into the texts of its elements, holding one element at a time. It
 * tracks nesting and strings only; each element's own syntax is left to JSON.parse.
 */
export async function* splitJsonArray(chunks: AsyncIterable<string>, name: string): AsyncGenerator<string> {
  // element: the first element or "]"; next: an element after a comma; comma: "," or "]"
  let state: 'start' | 'element' | 'next' | 'comma' | 'end' = 'start';
  let depth = 0;
  let inString = false;
  let escaped = false;
  let parts: string[] = [];
  let from = -1; // where the current element starts in this chunk (-1: not in one)
  let offset = 0;
  const fail = (at: number, what: string): never => {
    throw usage(
      `${name}: ${what} at character ${offset + at}; a .json dataset must be one JSON array of objects`,
    );
  };
  for await (const chunk of chunks) {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (from !== -1) {
        // Inside an element.
        if (inString) {
          if (escaped) escaped = false;
          else if (c === BACKSLASH) escaped = true;
          else if (c === QUOTE) inString = false;
          continue;
        }
        if (c === QUOTE) inString = true;
        else if (isOpen(c)) depth += 1;
        else if (isClose(c) && depth > 0) {
          depth -= 1;
          if (depth === 0) {
            parts.push(chunk.slice(from, i + 1));
            yield parts.join('');
            parts = [];
            from = -1;
            state = 'comma';
          }
        } else if (depth === 0 && (c === COMMA || c === CLOSE_BRACKET || isSpace(c))) {
          // The end of a scalar element: the delimiter is looked at again below.
          parts.push(chunk.slice(from, i));
          yield parts.join('');
          parts = [];
          from = -1;
          state = 'comma';
          i -= 1;
        }
        continue;
      }
      if (isSpace(c) || c === BOM) continue;
      if (state === 'start') {
        if (c !== OPEN_BRACKET) fail(i, `expected "[" but found "${chunk[i]}"`);
        state = 'element';
      } else if (state === 'element' || state === 'next') {
        if (c === CLOSE_BRACKET && state === 'element') state = 'end';
        else if (c === CLOSE_BRACKET || c === COMMA) fail(i, `expected an element but found "${chunk[i]}"`);
        else {
          from = i;
          depth = isOpen(c) ? 1 : 0;
          inString = c === QUOTE;
          escaped = false;
        }
      } else if (state === 'comma') {
        if (c === COMMA) state = 'next';
        else if (c === CLOSE_BRACKET) state = 'end';
        else fail(i, `expected "," or "]" but found "${chunk[i]}"`);
      } else fail(i, `unexpected "${chunk[i]}" after the array`);
    }
    if (from !== -1) {
      parts.push(chunk.slice(from));
      from = 0;
    }
    offset += chunk.length;
  }
  if (from !== -1 || state !== 'end') throw usage(`${name}: the JSON array is not closed`);
}
