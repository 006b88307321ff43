import { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { isObject, parseJson } from '../../shared/json.js';
import { rowItemId } from './items.js';
import { readVersion, type VersionRow } from './versions-repository.js';

/**
 * A version of a dataset (or one split of it) as JSON lines or CSV, read a page at a time: any size
 * streams in bounded memory, and the version read never changes underneath (its rows are fixed once
 * committed). JSON lines: each row's fields with its `id` and, when it has some, its `splits`. CSV
 * (RFC 4180: CRLF line ends, every field quoted, quotes doubled): columns id, input, output, expected,
 * metadata, splits; a string value as is, any other value as JSON.
 */

const PAGE = 500;

export const CSV_COLUMNS = ['id', 'input', 'output', 'expected', 'metadata', 'splits'] as const;

/** One CSV field, quoted (RFC 4180): the text between quotes, each quote doubled. */
export function csvField(value: unknown): string {
  const text =
    value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  return `"${text.replace(/"/g, '""')}"`;
}

function exportedRow(datasetId: string, r: VersionRow): Record<string, unknown> {
  const data = parseJson<unknown>(r.data, null);
  const fields = isObject(data) ? data : {};
  const out: Record<string, unknown> = { id: rowItemId(datasetId, r, data), ...fields };
  out.id = rowItemId(datasetId, r, data);
  if (r.splits.length > 0) out.splits = r.splits;
  return out;
}

function jsonLine(row: Record<string, unknown>): string {
  return `${JSON.stringify(row)}\n`;
}

function csvLine(row: Record<string, unknown>): string {
  return `${CSV_COLUMNS.map((c) => csvField(row[c])).join(',')}\r\n`;
}

export function exportVersion(
  db: Kysely<Database>,
  datasetId: string,
  version: number,
  options: { split: string | null; format: 'jsonl' | 'csv' },
): Readable {
  const line = options.format === 'csv' ? csvLine : jsonLine;
  let next = 0;
  let header = options.format === 'csv';
  return new Readable({
    async read() {
      try {
        const head = header ? `${CSV_COLUMNS.join(',')}\r\n` : '';
        header = false;
        const rows = await readVersion(db, datasetId, version, {
          from: next,
          to: next + PAGE,
          split: options.split,
        });
        next += rows.length;
        const body = rows.map((r) => line(exportedRow(datasetId, r))).join('');
        if (head + body !== '') this.push(head + body);
        if (rows.length < PAGE) this.push(null);
      } catch (err) {
        this.destroy(err instanceof Error ? err : new Error(String(err)));
      }
    },
  });
}
