import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import type {
  CreateMonitor,
  ListMonitorSamplesParams,
  ListMonitorsParams,
  Monitor,
  MonitorDeletedResponse,
  MonitorResults,
  MonitorResultsParams,
  MonitorSample,
  PatchMonitor,
} from '../types.js';
import { listPages, seg } from './shared.js';

/** `/v1/monitors`: standing rules that score a sampled share of a container's calls as they are recorded. */
export class Monitors {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Newest first, optionally of one container (id or label). */
  list(params: ListMonitorsParams = {}, options?: RequestOptions): PagePromise<Monitor> {
    return listPages(this.#transport, '/v1/monitors', params, options);
  }

  /** The answer carries `alert_secret`, the key webhooks are signed with: shown this once. */
  create(body: CreateMonitor, options?: RequestOptions): Promise<Monitor> {
    return this.#transport.request({ method: 'POST', path: '/v1/monitors', json: body, options });
  }

  /** By id or name. */
  get(monitor: string, options?: RequestOptions): Promise<Monitor> {
    return this.#transport.request({ method: 'GET', path: `/v1/monitors/${seg(monitor)}`, options });
  }

  update(monitor: string, patch: PatchMonitor, options?: RequestOptions): Promise<Monitor> {
    return this.#transport.request({
      method: 'PATCH',
      path: `/v1/monitors/${seg(monitor)}`,
      json: patch,
      options,
    });
  }

  /** Stops selecting new calls; what was selected is still scored. */
  pause(monitor: string, options?: RequestOptions): Promise<Monitor> {
    return this.update(monitor, { enabled: false }, options);
  }

  /** Selects calls recorded from now on (not those of the pause). */
  resume(monitor: string, options?: RequestOptions): Promise<Monitor> {
    return this.update(monitor, { enabled: true }, options);
  }

  delete(monitor: string, options?: RequestOptions): Promise<MonitorDeletedResponse> {
    return this.#transport.request({ method: 'DELETE', path: `/v1/monitors/${seg(monitor)}`, options });
  }

  /** Per-evaluator totals and buckets (`minute`, `hour`, `day`) over the calls recorded in a window. */
  results(
    monitor: string,
    params: MonitorResultsParams = {},
    options?: RequestOptions,
  ): Promise<MonitorResults> {
    return this.#transport.request({
      method: 'GET',
      path: `/v1/monitors/${seg(monitor)}/results`,
      query: params,
      options,
    });
  }

  /** Scored calls, newest first; `failed`, `evaluator`, `since`, `until` filter them. */
  samples(
    monitor: string,
    params: ListMonitorSamplesParams = {},
    options?: RequestOptions,
  ): PagePromise<MonitorSample> {
    return listPages(this.#transport, `/v1/monitors/${seg(monitor)}/samples`, params, options);
  }
}
