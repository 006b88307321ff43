import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import type {
  CreateDataset,
  Dataset,
  DatasetDeletedResponse,
  DatasetDiff,
  DatasetDiffParams,
  DatasetItem,
  DatasetItemDeletedResponse,
  DatasetItemsChanged,
  DatasetVersion,
  ExportDatasetParams,
  ListDatasetItemsParams,
  ListDatasetsParams,
  ListDatasetVersionsParams,
  NewDatasetItem,
  PatchDataset,
  PatchDatasetItem,
  UploadDatasetParams,
} from '../types.js';
import { jsonLinesUpload, type UploadOptions, type UploadSource } from '../upload.js';
import { listPages, seg } from './shared.js';

/** A dataset row: its `input`, `output` and `expected` fields are the canonical ones, the rest is kept. */
export type DatasetRow = Record<string, unknown>;

export interface UploadDatasetOptions extends UploadDatasetParams, UploadOptions {}

/**
 * `/v1/datasets`: items to evaluate and to compare against. Adding, editing or removing items makes a
 * new version; earlier versions stay readable (`items(…, {version})`, `export`, `diff`).
 */
export class Datasets {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** From rows in the request body (JSON); for large datasets use `upload`. */
  create(body: CreateDataset, options?: RequestOptions): Promise<Dataset> {
    return this.#transport.request({ method: 'POST', path: '/v1/datasets', json: body, options });
  }

  /**
   * Streams rows as JSON lines (`application/x-ndjson`) from a file path or an iterable of rows or
   * bytes, never holding the whole dataset in memory; `onProgress({bytes, rows})` follows the upload.
   * A file or an array is sent again on a retry; a one-shot iterator is not retried.
   */
  async upload(
    source: UploadSource<DatasetRow>,
    { label, description, onProgress, gzip }: UploadDatasetOptions = {},
    options?: RequestOptions,
  ): Promise<Dataset> {
    return this.#transport.request({
      method: 'POST',
      path: '/v1/datasets',
      query: { label, description },
      upload: jsonLinesUpload(source, { onProgress, gzip }),
      options,
    });
  }

  /** Newest first. */
  list(params: ListDatasetsParams = {}, options?: RequestOptions): PagePromise<Dataset> {
    return listPages(this.#transport, '/v1/datasets', params, options);
  }

  /** By id or label. */
  get(dataset: string, options?: RequestOptions): Promise<Dataset> {
    return this.#transport.request({ method: 'GET', path: `/v1/datasets/${seg(dataset)}`, options });
  }

  /** Label, description or metadata, by id or label (items change through addItem, updateItem, deleteItem). */
  update(dataset: string, patch: PatchDataset, options?: RequestOptions): Promise<Dataset> {
    return this.#transport.request({
      method: 'PATCH',
      path: `/v1/datasets/${seg(dataset)}`,
      json: patch,
      options,
    });
  }

  /** By id; a conflict while a queued or running run uses it. */
  delete(datasetId: string, options?: RequestOptions): Promise<DatasetDeletedResponse> {
    return this.#transport.request({ method: 'DELETE', path: `/v1/datasets/${seg(datasetId)}`, options });
  }

  /**
   * Items of a version (default the latest; `split`: one split) in order; `range: 'start:end'` selects
   * a slice, within which limit/offset page.
   */
  items(
    dataset: string,
    params: ListDatasetItemsParams = {},
    options?: RequestOptions,
  ): PagePromise<DatasetItem> {
    return listPages(this.#transport, `/v1/datasets/${seg(dataset)}/items`, params, options);
  }

  /** Adds one item (given, or made `from` a task log, span, session or review): a new version. */
  addItem(dataset: string, item: NewDatasetItem, options?: RequestOptions): Promise<DatasetItemsChanged> {
    return this.#transport.request({
      method: 'POST',
      path: `/v1/datasets/${seg(dataset)}/items`,
      json: item,
      options,
    });
  }

  /** Adds up to 1000 items: one new version. */
  addItems(dataset: string, items: NewDatasetItem[], options?: RequestOptions): Promise<DatasetItemsChanged> {
    return this.#transport.request({
      method: 'POST',
      path: `/v1/datasets/${seg(dataset)}/items/batch`,
      json: { items },
      options,
    });
  }

  /** Replaces fields of an item: a new version (earlier ones keep the item as it was). */
  updateItem(
    dataset: string,
    itemId: string,
    patch: PatchDatasetItem,
    options?: RequestOptions,
  ): Promise<DatasetItemsChanged> {
    return this.#transport.request({
      method: 'PATCH',
      path: `/v1/datasets/${seg(dataset)}/items/${seg(itemId)}`,
      json: patch,
      options,
    });
  }

  /** Removes an item: a new version (earlier ones keep it). */
  deleteItem(dataset: string, itemId: string, options?: RequestOptions): Promise<DatasetItemDeletedResponse> {
    return this.#transport.request({
      method: 'DELETE',
      path: `/v1/datasets/${seg(dataset)}/items/${seg(itemId)}`,
      options,
    });
  }

  /** The versions, newest first. */
  versions(
    dataset: string,
    params: ListDatasetVersionsParams = {},
    options?: RequestOptions,
  ): PagePromise<DatasetVersion> {
    return listPages(this.#transport, `/v1/datasets/${seg(dataset)}/versions`, params, options);
  }

  /** What changed between versions `from` and `to` (default the latest). */
  diff(dataset: string, params: DatasetDiffParams, options?: RequestOptions): Promise<DatasetDiff> {
    return this.#transport.request({
      method: 'GET',
      path: `/v1/datasets/${seg(dataset)}/diff`,
      query: params,
      options,
    });
  }

  /**
   * A version (default the latest) as JSON lines or CSV (`format`), streamed: the response with its body
   * unread (`response.body` to stream it, `response.text()` for small ones).
   */
  export(dataset: string, params: ExportDatasetParams = {}, options?: RequestOptions): Promise<Response> {
    return this.#transport.stream({
      method: 'GET',
      path: `/v1/datasets/${seg(dataset)}/export`,
      query: params,
      options,
    });
  }
}
