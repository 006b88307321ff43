import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { Kysely } from 'kysely';
import sjson from 'secure-json-parse';
import type { Database } from '../db/schema.js';
import { MAX_JSON_DEPTH } from '../http/json-parser.js';
import { asUploadError } from '../http/uploads.js';
import { isWellFormed } from '../http/validation.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';

/** What a catalog feature that takes JSON-lines uploads needs (datasets, task log imports). */
export interface UploadContext {
  db: Kysely<Database>;
  /** Where JSON-lines uploads are spooled before they are inserted. */
  spoolDir: string;
  /** Largest upload, in bytes, and largest single row, in characters. */
  uploadLimit: number;
  maxRowChars: number;
}

/**
 * JSON lines (datasets, task log imports): the line splitter, the storability checks of a line, the
 * disk spool and the batching. The body is streamed once into a spool file while each line is parsed
 * and checked, so a bad line answers 422 before anything touches the database and a slow client never
 * holds a database transaction open; the spool is then inserted in batches in one transaction. Memory
 * stays bounded by one batch whatever the upload size.
 */
const TOO_LONG = Symbol('too long');
type Line = string | typeof TOO_LONG;

/**
 * Splits a byte stream into lines (newline removed, a trailing `\r` and a leading BOM dropped), chunk by
 * chunk and synchronously, so nothing but a partial line is held between chunks. With a length limit,
 * an overlong line comes out as TOO_LONG without being kept.
 */
class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private carry = '';
  private overflow = false;
  private first = true;

  constructor(private readonly maxLineChars: number | null) {}

  private emit(line: string, onLine: (line: Line) => void): void {
    const wasFirst = this.first;
    this.first = false;
    if (this.overflow || (this.maxLineChars !== null && line.length > this.maxLineChars)) {
      this.overflow = false;
      onLine(TOO_LONG);
      return;
    }
    let out = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (wasFirst && out.charCodeAt(0) === 0xfeff) out = out.slice(1);
    onLine(out);
  }

  write(chunk: Buffer, onLine: (line: Line) => void): void {
    const text = this.decoder.write(chunk);
    let start = 0;
    let nl = text.indexOf('\n');
    while (nl !== -1) {
      const piece = text.slice(start, nl);
      const line = this.carry === '' ? piece : this.carry + piece;
      this.carry = '';
      this.emit(line, onLine);
      start = nl + 1;
      nl = text.indexOf('\n', start);
    }
    if (this.overflow) return;
    // Flattened, so the partial line does not pin the whole chunk's text.
    this.carry = this.carry + text.slice(start);
    if (this.maxLineChars !== null && this.carry.length > this.maxLineChars) {
      this.overflow = true;
      this.carry = '';
    }
  }

  end(onLine: (line: Line) => void): void {
    const rest = this.carry + this.decoder.end();
    this.carry = '';
    if (this.overflow || rest !== '') this.emit(rest, onLine);
  }
}

/** Why a parsed value cannot be stored as sent, or null: too deep, non-finite numbers, NUL characters. */
function unstorable(value: unknown, depth = 1): string | null {
  if (typeof value === 'string') {
    return value.includes('\u0000') ? 'strings must not contain NUL (\\u0000) characters' : null;
  }
  if (typeof value === 'number') return Number.isFinite(value) ? null : 'numbers must be finite';
  if (value === null || typeof value !== 'object') return null;
  if (depth > MAX_JSON_DEPTH) return `JSON nested deeper than ${MAX_JSON_DEPTH} levels`;
  if (Array.isArray(value)) {
    for (const child of value) {
      const bad = unstorable(child, depth + 1);
      if (bad) return bad;
    }
    return null;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    if (key.includes('\u0000')) return 'keys must not contain NUL (\\u0000) characters';
    const bad = unstorable(record[key], depth + 1);
    if (bad) return bad;
  }
  return null;
}

/** A `\uD800`-`\uDFFF` escape: the only way a lone surrogate reaches a line (UTF-8 cannot carry one). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** Whether a parsed value holds a string or key with an unpaired surrogate. */
function hasLoneSurrogate(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (!isWellFormed(value)) return true;
    } else if (Array.isArray(value)) {
      stack.push(...value);
    } else if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) {
        if (!isWellFormed(key)) return true;
        stack.push(child);
      }
    }
  }
  return false;
}

/**
 * For a line known to be valid JSON: the reason it cannot be stored as sent because a string holds an
 * unpaired surrogate escape (`"\ud800"`: UTF-8, so both databases, cannot hold it), or null. Lines
 * without any surrogate escape (nearly all) are answered by one scan; the others are parsed and walked.
 * Lines read from UTF-8 carry surrogates only as escapes.
 */
export function surrogateProblem(text: string): string | null {
  if (!SURROGATE_ESCAPE.test(text)) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null; // not JSON: the line's own check says so
  }
  return hasLoneSurrogate(value)
    ? 'strings must not contain unpaired UTF-16 surrogates (e.g. \\ud800 without its pair)'
    : null;
}

/** Parses one line; returns the value or the reason it is refused. */
export function parseLine(text: string): { value: unknown } | { error: string } {
  let value: unknown;
  try {
    value = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    return { error: `not valid JSON: ${err instanceof Error ? err.message : 'parse error'}` };
  }
  const bad = unstorable(value);
  return bad === null ? { value } : { error: bad };
}

export interface SpoolOptions {
  /** Directory for the spool file (created when missing). */
  dir: string;
  maxBytes: number;
  maxLineChars: number;
  /**
   * Checks the text of one non-blank line (line numbers are 1-based); issue locations are relative to the
   * row and get `['body', 'line', n]` in front.
   */
  check(text: string, line: number): ValidationIssue[];
}

export interface Spool {
  /** Rows accepted (blank lines are skipped). */
  count: number;
  /** The rows (trimmed line text), in order, read back from disk. */
  rows(): AsyncGenerator<string>;
  remove(): Promise<void>;
}

const MAX_ISSUES = 20;
const SPOOL_BUFFER = 1 << 20;

/**
 * Reads the whole upload into a spool file, checking every line as it passes. The bytes are written as
 * received (they live outside the JS heap), and every line is checked synchronously within its chunk,
 * so nothing of the upload outlives the chunk it came in: memory stays flat whatever the size. On bad lines,
 * keeps reading (so the client gets its answer) and throws one 422 listing up to 20 of them, keeping nothing.
 */
export async function spoolNdjson(
  source: AsyncIterable<Buffer | string>,
  options: SpoolOptions,
): Promise<Spool> {
  fs.mkdirSync(options.dir, { recursive: true });
  const file = path.join(options.dir, `upload-${randomBytes(8).toString('hex')}.ndjson`);
  const out = await fs.promises.open(file, 'wx', 0o600);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await out.close();
  };
  const remove = async () => {
    await close().catch(() => {});
    await fs.promises.rm(file, { force: true });
  };
  // Received bytes are copied into one reused buffer and written when it is full: socket chunks then die
  // young instead of being kept (and promoted by the GC) while a write is pending.
  const pending = Buffer.allocUnsafeSlow(SPOOL_BUFFER);
  let used = 0;
  const writeOut = async () => {
    let done = 0;
    while (done < used) done += (await out.write(pending, done, used - done)).bytesWritten;
    used = 0;
  };
  const issues: ValidationIssue[] = [];
  const splitter = new LineSplitter(options.maxLineChars);
  let count = 0;
  let lineNo = 0;
  let bytes = 0;
  const onLine = (line: Line) => {
    lineNo++;
    if (issues.length >= MAX_ISSUES) return;
    const at = ['body', 'line', lineNo];
    if (line === TOO_LONG) {
      issues.push({
        loc: at,
        msg: `Line ${lineNo} is longer than ${options.maxLineChars} characters`,
        type: 'too_long',
      });
      return;
    }
    if (line.trim() === '') return;
    for (const i of options.check(line, lineNo)) {
      issues.push({ loc: [...at, ...i.loc], msg: `Line ${lineNo}: ${i.msg}`, type: i.type });
    }
    count++;
  };
  try {
    for await (const raw of source) {
      const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
      bytes += chunk.length;
      if (bytes > options.maxBytes) {
        throw new ApiError('payload_too_large', `Upload exceeds ${options.maxBytes} bytes`, {
          limit: options.maxBytes,
        });
      }
      splitter.write(chunk, onLine);
      if (issues.length > 0) continue;
      for (let at = 0; at < chunk.length; ) {
        const n = chunk.copy(pending, used, at);
        used += n;
        at += n;
        if (used === pending.length) await writeOut();
      }
    }
    splitter.end(onLine);
    if (issues.length > 0) throw ApiError.validation(issues.slice(0, MAX_ISSUES));
    await writeOut();
    await close();
  } catch (err) {
    await remove();
    throw asUploadError(err);
  }
  return {
    count,
    rows: async function* () {
      const reader = new LineSplitter(null);
      let lines: string[] = [];
      const keep = (line: Line) => {
        if (typeof line !== 'string') return;
        const t = line.trim();
        if (t !== '') lines.push(t);
      };
      for await (const chunk of fs.createReadStream(file)) {
        reader.write(chunk as Buffer, keep);
        const ready = lines;
        lines = [];
        yield* ready;
      }
      reader.end(keep);
      yield* lines;
    },
    remove,
  };
}

/** Groups rows into batches bounded by row count and by characters, for multi-row inserts. */
export async function* batches<T extends string>(
  rows: AsyncIterable<T> | Iterable<T>,
  maxRows: number,
  maxChars: number,
): AsyncGenerator<T[]> {
  let batch: T[] = [];
  let chars = 0;
  for await (const row of rows) {
    batch.push(row);
    chars += row.length;
    if (batch.length >= maxRows || chars >= maxChars) {
      yield batch;
      batch = [];
      chars = 0;
    }
  }
  if (batch.length) yield batch;
}
