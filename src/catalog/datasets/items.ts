import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { isObject, parseJson } from '../../shared/json.js';
import type { Item, Range } from '../items.js';
import { itemCount, readItemRows } from './repository.js';
import { countVersion, readVersion, type VersionRow } from './versions-repository.js';

/** A row's own `id` (string or number) when it has one, otherwise `<dataset id>:<position>`. */
export function itemId(datasetId: string, position: number, row: unknown): string {
  const own = isObject(row) ? row.id : undefined;
  return typeof own === 'string' || typeof own === 'number' ? String(own) : `${datasetId}:${position}`;
}

/** The id of a stored item version: its stable id, else the upload row's own id or its position. */
export function rowItemId(
  datasetId: string,
  row: Pick<VersionRow, 'item_id' | 'row'>,
  data: unknown,
): string {
  return row.item_id ?? itemId(datasetId, row.row, data);
}

/** Which version of a dataset (and which split of it) a reader reads. */
export interface DatasetPin {
  version: number;
  split?: string | null;
}

/**
 * The canonical items of places [range.start, range.end) of a dataset's version (version 1, the upload,
 * when no pin is given), in the dataset's order.
 */
export async function readDatasetItems(
  db: Kysely<Database>,
  datasetId: string,
  range: Range,
  pin: DatasetPin = { version: 1 },
): Promise<Item[]> {
  const rows = await readVersion(db, datasetId, pin.version, {
    from: range.start,
    to: range.end,
    split: pin.split ?? null,
  });
  return rows.map((r) => {
    const row = parseJson<unknown>(r.data, null);
    const fields = isObject(row) ? row : {};
    return {
      id: rowItemId(datasetId, r, row),
      input: fields.input ?? null,
      output: fields.output ?? null,
      expected: fields.expected ?? null,
      metadata: isObject(fields.metadata) ? fields.metadata : {},
      raw: row,
    };
  });
}

/** The number of items of a dataset's version (and split). */
export async function countPinnedItems(
  db: Kysely<Database>,
  datasetId: string,
  pin: DatasetPin,
): Promise<number> {
  return countVersion(db, datasetId, pin.version, pin.split ?? null);
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
