import { randomUUID } from 'node:crypto';
import { APIConnectionError, isRecoverable, WaitTimeoutError } from '../errors.js';
import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import { backoffMs, sleep } from '../retry.js';
import { parseEventStream } from '../sse.js';
import type {
  CompareParams,
  CreateRun,
  ListRunsParams,
  ListSamplesParams,
  PatchRun,
  Run,
  RunComparison,
  RunEvent,
  RunProgress,
  RunSample,
  RunStatus,
} from '../types.js';
import { listPages, seg } from './shared.js';

/** The statuses a run ends in (test/client checks them against the server's list). */
export const TERMINAL_STATUSES: readonly RunStatus[] = ['completed', 'error', 'cancelled'];

export const isTerminal = (status: string): boolean =>
  (TERMINAL_STATUSES as readonly string[]).includes(status);

export interface CreateRunOptions extends RequestOptions {
  /**
   * Sent as `Idempotency-Key`: the same key with the same body returns the same run, never a second one.
   * Default: a fresh key per `create` call, reused by its retries.
   */
  idempotencyKey?: string;
}

export interface WaitOptions {
  /** Give up (WaitTimeoutError) after this many ms; default: wait as long as it takes. */
  timeoutMs?: number;
  /** Called with each progress event: positions done out of the total. */
  onProgress?: (progress: RunProgress) => void;
  /** Called with each status change (`queued`, `running`, then the terminal one). */
  onStatus?: (status: string) => void;
  signal?: AbortSignal;
}

/** `/v1/evaluation/runs`: launch evaluation runs, follow them, read their results. */
export class Runs {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Newest first, optionally of one container, status or name. */
  list(params: ListRunsParams = {}, options?: RequestOptions): PagePromise<Run> {
    return listPages(this.#transport, '/v1/evaluation/runs', params, options);
  }

  /** Launches a run. Retries reuse the call's Idempotency-Key, so a retry never launches it twice. */
  create(body: CreateRun, { idempotencyKey, ...options }: CreateRunOptions = {}): Promise<Run> {
    return this.#transport.request({
      method: 'POST',
      path: '/v1/evaluation/runs',
      json: body,
      headers: { 'idempotency-key': idempotencyKey ?? randomUUID() },
      idempotent: true,
      options,
    });
  }

  get(runId: string, options?: RequestOptions): Promise<Run> {
    return this.#transport.request({ method: 'GET', path: `/v1/evaluation/runs/${seg(runId)}`, options });
  }

  /** Renames a run, whatever its status (`{ name: null }` removes its name). */
  update(runId: string, patch: PatchRun, options?: RequestOptions): Promise<Run> {
    return this.#transport.request({
      method: 'PATCH',
      path: `/v1/evaluation/runs/${seg(runId)}`,
      json: patch,
      options,
    });
  }

  /** Stops a queued or running run; partial results are kept. A conflict when it has already ended. */
  cancel(runId: string, options?: RequestOptions): Promise<Run> {
    return this.#transport.request({
      method: 'POST',
      path: `/v1/evaluation/runs/${seg(runId)}/cancel`,
      // Safe to send again: a second cancel changes nothing (409 once the run has ended).
      idempotent: true,
      options,
    });
  }

  /** Per-sample results: one per launch, evaluator and position; filter by launch, evaluator, passed, errored. */
  samples(runId: string, params: ListSamplesParams = {}, options?: RequestOptions): PagePromise<RunSample> {
    return listPages(this.#transport, `/v1/evaluation/runs/${seg(runId)}/samples`, params, options);
  }

  /** Paired score differences against a baseline run, per evaluator and launch. */
  compare(runId: string, params: CompareParams, options?: RequestOptions): Promise<RunComparison> {
    return this.#transport.request({
      method: 'GET',
      path: `/v1/evaluation/runs/${seg(runId)}/compare`,
      query: params,
      options,
    });
  }

  /**
   * The run's server-sent events (`status`, `progress`, `queue`) as they come; the iteration ends after
   * the terminal `status` event. Breaking out of the loop closes the connection.
   */
  async *stream(runId: string, options?: RequestOptions): AsyncGenerator<RunEvent, void, undefined> {
    const response = await this.#transport.stream({
      method: 'GET',
      path: `/v1/evaluation/runs/${seg(runId)}/events`,
      headers: { accept: 'text/event-stream' },
      options,
    });
    if (!response.body) return;
    try {
      for await (const raw of parseEventStream(response.body)) {
        let data: unknown;
        try {
          data = JSON.parse(raw.data);
        } catch {
          data = raw.data;
        }
        yield { event: raw.event, data } as RunEvent;
      }
    } catch (err) {
      if (options?.signal?.aborted) throw options.signal.reason;
      throw new APIConnectionError(`The event stream of run ${runId} broke: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  /**
   * Resolves with the run once it has reached a terminal status (completed, error or cancelled; check
   * `status`). Follows the event stream, reconnecting after a broken connection; WaitTimeoutError after
   * `timeoutMs`.
   */
  async wait(runId: string, { timeoutMs, onProgress, onStatus, signal }: WaitOptions = {}): Promise<Run> {
    let lastStatus: string | null = null;
    let reconnects = 0;
    const deadline = new AbortController();
    const timer =
      timeoutMs === undefined
        ? null
        : setTimeout(() => deadline.abort(new WaitTimeoutError(runId, lastStatus, timeoutMs)), timeoutMs);
    const combined = signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal;
    try {
      while (true) {
        try {
          for await (const event of this.stream(runId, { signal: combined })) {
            if (event.event === 'progress') onProgress?.(event.data);
            else if (event.event === 'status' && event.data.status !== lastStatus) {
              lastStatus = event.data.status;
              onStatus?.(lastStatus);
              if (isTerminal(lastStatus)) break;
            }
          }
        } catch (err) {
          if (combined.aborted) throw combined.reason;
          if (!isRecoverable(err)) throw err;
        }
        const run = await this.get(runId, { signal: combined });
        if (isTerminal(run.status)) return run;
        // The stream ended early (a restarted server, a proxy's idle timeout): follow it again.
        await sleep(backoffMs(Math.min(reconnects++, 4)), combined);
      }
    } catch (err) {
      if (deadline.signal.aborted && !signal?.aborted) throw deadline.signal.reason;
      throw err;
    } finally {
      if (timer) clearTimeout(timer);
    }
  }
}
