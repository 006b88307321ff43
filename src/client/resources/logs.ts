import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import type { ImportLog, ListTaskLogsParams, LogImport, TaskLog } from '../types.js';
import { jsonLinesUpload, type UploadOptions, type UploadSource } from '../upload.js';
import { listPages, seg } from './shared.js';

/** `/v1/containers/{container}/logs`: the calls recorded in a container (its task logs). */
export class TaskLogs {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** A container's logs (id or label) in seq order, optionally of one model, since a time, or a range. */
  list(container: string, params: ListTaskLogsParams = {}, options?: RequestOptions): PagePromise<TaskLog> {
    return listPages(this.#transport, `/v1/containers/${seg(container)}/logs`, params, options);
  }

  /**
   * Imports calls recorded elsewhere, all or nothing. Not idempotent: a lost response is not retried
   * (only refused connections, 429 and 503 are), since a second import would add the logs twice.
   */
  import(container: string, logs: ImportLog[], options?: RequestOptions): Promise<LogImport> {
    return this.#transport.request({
      method: 'POST',
      path: `/v1/containers/${seg(container)}/logs`,
      json: logs,
      options,
    });
  }

  /** As `import`, streamed as JSON lines from a file path or an iterable of entries or bytes. */
  async upload(
    container: string,
    source: UploadSource<ImportLog>,
    upload: UploadOptions = {},
    options?: RequestOptions,
  ): Promise<LogImport> {
    return this.#transport.request({
      method: 'POST',
      path: `/v1/containers/${seg(container)}/logs`,
      upload: jsonLinesUpload(source, upload),
      options,
    });
  }
}
