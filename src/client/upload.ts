import fs from 'node:fs';
import type { Upload } from './http.js';

/**
 * What a JSON-lines upload reads: a file path, or rows (objects, sent one JSON line each) and/or raw
 * bytes or text of JSON lines, from an array, an iterable or an async iterable.
 */
export type UploadSource<Row> =
  | string
  | Iterable<Row | Uint8Array | string>
  | AsyncIterable<Row | Uint8Array | string>;

/** Progress of an upload, counted before any compression: bytes sent and non-blank lines among them. */
export interface UploadProgress {
  bytes: number;
  rows: number;
}

export interface UploadOptions {
  /** Called as the body is handed to the connection, and once at the end. */
  onProgress?: (progress: UploadProgress) => void;
  /** Compress the body on the fly (`Content-Encoding: gzip`). */
  gzip?: boolean;
}

const BATCH_BYTES = 64 * 1024;
const encoder = new TextEncoder();

async function* chunksOf<Row>(source: UploadSource<Row>): AsyncGenerator<Uint8Array> {
  if (typeof source === 'string') {
    for await (const chunk of fs.createReadStream(source, { highWaterMark: 256 * 1024 })) {
      yield chunk as Buffer;
    }
    return;
  }
  // Rows are gathered into chunks of about 64 KiB, so that a million small rows are not a million writes.
  let lines: string[] = [];
  let size = 0;
  for await (const item of source) {
    if (item instanceof Uint8Array || typeof item === 'string') {
      if (lines.length) yield encoder.encode(lines.join(''));
      lines = [];
      size = 0;
      yield typeof item === 'string' ? encoder.encode(item) : item;
      continue;
    }
    const line = `${JSON.stringify(item)}\n`;
    lines.push(line);
    size += line.length;
    if (size >= BATCH_BYTES) {
      yield encoder.encode(lines.join(''));
      lines = [];
      size = 0;
    }
  }
  if (lines.length) yield encoder.encode(lines.join(''));
}

/** Counts non-blank lines across chunks. */
class LineCounter {
  rows = 0;
  bytes = 0;
  #open = false;

  add(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (b === 10) {
        if (this.#open) this.rows += 1;
        this.#open = false;
      } else if (b !== 13 && b !== 32 && b !== 9) {
        this.#open = true;
      }
    }
  }

  /** The last line may lack its newline. */
  end(): void {
    if (this.#open) this.rows += 1;
    this.#open = false;
  }
}

/** The streamed `application/x-ndjson` body of an upload, re-readable when the source is a file or an array. */
export function jsonLinesUpload<Row>(source: UploadSource<Row>, options: UploadOptions = {}): Upload {
  const replayable = typeof source === 'string' || Array.isArray(source);
  if (typeof source === 'string' && !fs.existsSync(source)) {
    throw new TypeError(`No such file to upload: ${source}`);
  }
  return {
    contentType: 'application/x-ndjson',
    headers: options.gzip ? { 'content-encoding': 'gzip' } : {},
    replayable,
    open(touch) {
      const chunks = chunksOf(source);
      const counter = new LineCounter();
      const report = () => options.onProgress?.({ bytes: counter.bytes, rows: counter.rows });
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const next = await chunks.next();
          touch();
          if (next.done) {
            counter.end();
            report();
            controller.close();
            return;
          }
          counter.add(next.value);
          report();
          controller.enqueue(next.value);
        },
        async cancel() {
          await chunks.return(undefined);
        },
      });
      return options.gzip ? body.pipeThrough(new CompressionStream('gzip')) : body;
    },
  };
}
