import type { Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';

/**
 * CSV datasets, one reading for the CLI and the HTTP upload: the header row names the fields, every
 * other row is an object of strings keyed by it; a byte-order mark and blank lines are skipped. Read as
 * a stream, one record at a time, whatever the size.
 */

export type CsvRecord = Record<string, string>;

/** A CSV the parser refused: where (1-based line of the text) and why. */
export class CsvSyntaxError extends Error {
  constructor(
    readonly line: number,
    readonly reason: string,
  ) {
    super(`line ${line}: ${reason}`);
    this.name = 'CsvSyntaxError';
  }
}

/** What csv-parse says, without the line it also names (the line is reported apart). */
function reasonOf(err: CsvError): string {
  return err.message.replace(/:?\s*(at|on) line \d+\.?$/, '').replace(/\.$/, '');
}

/**
 * The records of a CSV text read from `source`. A malformed text (a row of
 * another length than the header, an unclosed quote, a header naming a field twice) fails the
 * iteration with a CsvSyntaxError naming its line; errors of the source itself pass through.
 */
export async function* csvRecords(source: Readable): AsyncGenerator<CsvRecord> {
  // A source that failed before it was read (a corrupt gzip body) has no error left to emit.
  if (source.errored) throw source.errored;
  const parser = parse({ columns: true, bom: true, skip_empty_lines: true });
  let sourceError: unknown = null;
  source.on('error', (err) => {
    sourceError = err;
    parser.destroy(err);
  });
  source.pipe(parser);
  try {
    for await (const record of parser) yield record as CsvRecord;
  } catch (err) {
    if (sourceError !== null) throw sourceError;
    if (err instanceof CsvError) {
      const line = typeof err.lines === 'number' ? err.lines : 0;
      throw new CsvSyntaxError(line, reasonOf(err));
    }
    throw err;
  } finally {
    source.unpipe(parser);
    if (!parser.destroyed) parser.destroy();
    // The rest of the source is read and dropped: a request body left unread would stall its connection.
    source.resume();
  }
}
