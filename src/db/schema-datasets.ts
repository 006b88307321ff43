/** Datasets, their items (one row per version of an item) and their versions. */

export interface DatasetTable {
  id: string;
  project_id: string;
  label: string;
  description: string | null;
  metadata: string;
  item_count: number;
  created_at: string;
  updated_at: string;
  /** Files (`/v1/files`): their purpose, name and size as uploaded; null for other datasets. */
  purpose?: string | null;
  filename?: string | null;
  bytes?: number | string | null;
  /** The dataset's current version (1: as uploaded; each change to its items adds one). */
  version?: number;
}

/**
 * One version of one item of a dataset. The rows of an upload sit at positions 0.. in order; a later
 * version of an item, or an item added later, takes the next free position.
 */
export interface DatasetItemTable {
  dataset_id: string;
  /** Unique in the dataset: a row's slot (the upload's rows: their 0-based order). */
  position: number;
  /** The row as uploaded (a JSON object). */
  data: string;
  /** The item's stable id; null on an upload's rows (their own `id` field, else `<dataset>:<position>`). */
  item_id?: string | null;
  /** The item's place in the dataset's order, kept by its later versions. */
  seq?: number | string | null;
  /** The first dataset version the row is part of. */
  valid_from?: number;
  /** The first dataset version it is no longer part of; null while current. */
  valid_to?: number | null;
  /** JSON array of the item's split names; null: none. */
  splits?: string | null;
  /** JSON of what the item was made from (`{kind, id}`); null: given as is. */
  origin?: string | null;
}

/** One version of a dataset: what it changed, and how many items it holds. */
export interface DatasetVersionTable {
  dataset_id: string;
  version: number;
  item_count: number;
  added: number;
  changed: number;
  removed: number;
  /** The API key that made the change (null: the upload, or made before versions were recorded). */
  created_by: string | null;
  created_at: string;
}

/** One response-cache entry of the embedded mode (`inference/cache/`). */
