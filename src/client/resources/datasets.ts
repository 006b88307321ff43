import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import type {
  CreateDataset,
  Dataset,
  DatasetDeletedResponse,
  DatasetItem,
  ListDatasetItemsParams,
  ListDatasetsParams,
  PatchDataset,
  UploadDatasetParams,
} from '../types.js';
import { jsonLinesUpload, type UploadOptions, type UploadSource } from '../upload.js';
import { listPages, seg } from './shared.js';

/** A dataset row: its `input`, `output` and `expected` fields are the canonical ones, the rest is kept. */
export type DatasetRow = Record<string, unknown>;

export interface UploadDatasetOptions extends UploadDatasetParams, UploadOptions {}

/** `/v1/datasets`: immutable row sets to evaluate and to compare against. */
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

  /** Label, description or metadata, by id or label (the rows are immutable). */
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

  /** Rows in position order; `range: 'start:end'` selects a slice, within which limit/offset page. */
  items(
    dataset: string,
    params: ListDatasetItemsParams = {},
    options?: RequestOptions,
  ): PagePromise<DatasetItem> {
    return listPages(this.#transport, `/v1/datasets/${seg(dataset)}/items`, params, options);
  }
}
