import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import type { ListTracesParams, Trace, TraceSummary } from '../types.js';
import { listPages, seg } from './shared.js';

/**
 * `/v1/traces`: the project's traces (spans sent over OTLP and gateway calls, kept as trees). Spans are
 * sent with an OpenTelemetry OTLP exporter, not with this client (see docs/traces.md).
 */
export class Traces {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Traces, newest first, optionally of a container, session or model, in a time window, or with errors. */
  list(params: ListTracesParams = {}, options?: RequestOptions): PagePromise<TraceSummary> {
    return listPages(this.#transport, '/v1/traces', params, options);
  }

  /** One trace with its spans (depth-first from the roots), each model call with its task log, tokens and cost. */
  get(traceId: string, options?: RequestOptions): Promise<Trace> {
    return this.#transport.request({ method: 'GET', path: `/v1/traces/${seg(traceId)}`, options });
  }
}
