import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { isObject, parseJson } from '../../shared/json.js';
import type { Item, Range } from '../items.js';
import { itemCount, readItemRows } from './repository.js';

/** A row's own `id` (string or number) when it has one, otherwise `<dataset id>:<position>`. */
export function itemId(datasetId: string, position: number, row: unknown): string {
  const own = isObject(row) ? row.id : undefined;
  return typeof own === 'string' || typeof own === 'number' ? String(own) : `${datasetId}:${position}`;
}

/** The canonical items of positions [range.start, range.end) of a dataset, in position order. */
export async function readDatasetItems(
  db: Kysely<Database>,
  datasetId: string,
  range: Range,
): Promise<Item[]> {
  const rows = await readItemRows(db, datasetId, range.start, range.end);
  return rows.map(({ position, data }) => {
    const row = parseJson<unknown>(data, null);
    const fields = isObject(row) ? row : {};
    return {
      id: itemId(datasetId, position, row),
      input: fields.input ?? null,
      output: fields.output ?? null,
      expected: fields.expected ?? null,
      metadata: isObject(fields.metadata) ? fields.metadata : {},
      raw: row,
    };
  });
}

/**
 * The items of an OpenAI eval run's rows (`{item: {...}, sample?: {...}}`): `item` is the templates'
 * item namespace as given, `sample` (a chat completion, a Responses object, or `output_text` /
 * `output_json` / `output_tools`) the output under evaluation.
 */
export async function readEvalItems(db: Kysely<Database>, datasetId: string, range: Range): Promise<Item[]> {
  const rows = await readItemRows(db, datasetId, range.start, range.end);
  return rows.map(({ position, data }) => {
    const row = parseJson<unknown>(data, null);
    const fields = isObject(row) ? row : {};
    const item = isObject(fields.item) ? fields.item : {};
    return {
      id: `${datasetId}:${position}`,
      input: item.input ?? null,
      output: fields.sample ?? null,
      expected: null,
      metadata: {},
      raw: row,
      evalItem: item,
    };
  });
}

export async function countDatasetItems(db: Kysely<Database>, datasetId: string): Promise<number> {
  return itemCount(db, datasetId);
}
