import { countDatasetItems, readEvalItems } from '../catalog/datasets/items.js';
import type { SourceKind } from './types.js';
import { refView } from './view.js';

/*
 * The rows of an OpenAI eval run (`{item, sample?}`), read as eval items: `item` is the templates' item
 * namespace as given, `sample` the output under evaluation. A run is shown reading them as a dataset (the
 * rows are one: the uploaded file, or a snapshot taken when the run is created).
 */

const view = refView('dataset', 'dataset');

/** Rows given inline in the request (`file_content`): the caller's own, stored as a dataset. */
export const evalRowsSource: SourceKind = {
  type: 'eval_rows',
  reads: [],
  eval: { sourceType: 'file_content', rows: 'inline' },
  count: (db, side) => countDatasetItems(db, side.ref),
  read: (db, side, range) => readEvalItems(db, side.ref, range),
  view,
};

/** An uploaded file's rows (`file_id`): reading them needs what reading the file needs. */
export const evalFileSource: SourceKind = {
  type: 'eval_file',
  reads: [{ permission: 'data:read', what: "an uploaded file's rows" }],
  eval: { sourceType: 'file_id', rows: 'file' },
  count: (db, side) => countDatasetItems(db, side.ref),
  read: (db, side, range) => readEvalItems(db, side.ref, range),
  view,
};
