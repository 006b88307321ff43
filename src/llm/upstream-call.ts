import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { undiciIfLoaded } from '../shared/undici-module.js';
import { type CancelSignal, onCancel } from './cancel.js';

/** Where an upstream body's bytes go once somebody reads it. */
export interface BodyConsumer {
  /** The body bytes that arrived together (one socket read's chunks, joined). */
  /**
   * `checked`, when given, is the bytes' text, every event in it already checked (`eventProblem`):
   * the stream's first read, replayed after its start was checked.
   */
  data(bytes: Buffer, checked?: string): void;
  end(): void;
  error(err: Error): void;
}

/**
 * An upstream response body as undici's dispatcher pushes it, with no Readable stream in between:
 * the gateway relays every byte of it on the hot path, and a stream costs events and ticks per chunk.
 * Chunks that arrive in one socket read reach the consumer as one buffer, so they go out in one write.
 */
export interface UpstreamBody {
  /** The whole body as text; rejects when the transfer fails. */
  text(): Promise<string>;
  /** Hands the body to `consumer` (once): what arrived already first, then the rest as it comes. */
  consume(consumer: BodyConsumer): void;
  /** Stops reading from the upstream until `resume()` (back-pressure from a slow client). */
  pause(): void;
  resume(): void;
  /** Gives up on the rest: the upstream request is aborted unless it is over. Nothing more is delivered. */
  destroy(): void;
  readonly destroyed: boolean;
}

export interface UpstreamResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: UpstreamBody;
}

/** One call's request: the pool knows the origin, the target the path. */
export interface UpstreamSend {
  headers: Record<string, string>;
  body: string;
  signal?: CancelSignal | undefined;
}

/**
 * undici's RequestAbortedError; the same fields (name AbortError, code UND_ERR_ABORTED) from a dispatcher
 * made by a caller that imported undici itself, before `loadUndici` ran.
 */
function abortError(message?: string): Error {
  const RequestAbortedError = undiciIfLoaded()?.errors.RequestAbortedError;
  if (RequestAbortedError) return new RequestAbortedError(message);
  return Object.assign(new Error(message ?? 'Request aborted'), {
    name: 'AbortError',
    code: 'UND_ERR_ABORTED',
  });
}

/** One upstream call: a dispatch handler that is also the response body it receives. */
class UpstreamCall implements Dispatcher.DispatchHandler, UpstreamBody {
  private controller: Dispatcher.DispatchController | null = null;
  private pending: Buffer[] = [];
  private consumer: BodyConsumer | null = null;
  private flushQueued = false;
  private over = false;
  private failure: Error | null = null;
  private closed = false;
  private abortReason: Error | null = null;
  private readonly stopListening: (() => void) | null;

  constructor(
    private readonly resolve: (response: UpstreamResponse) => void,
    private readonly reject: (err: Error) => void,
    signal: CancelSignal | undefined,
  ) {
    this.stopListening = signal ? onCancel(signal, () => this.abort(abortError())) : null;
    if (signal?.aborted) this.abort(abortError());
  }

  private abort(reason: Error): void {
    if (this.over) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }

  // Dispatch handler

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortReason) controller.abort(this.abortReason);
  }

  onResponseStart(_: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // Informational answers (1xx) come before the real one.
    if (statusCode < 200) return;
    this.resolve({ statusCode, headers, body: this });
  }

  onResponseData(_: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.closed) return;
    this.pending.push(chunk);
    if (this.consumer && !this.flushQueued) {
      this.flushQueued = true;
      // After the rest of this socket read has been parsed.
      queueMicrotask(() => this.flush());
    }
  }

  onResponseEnd(): void {
    this.settle(null);
  }

  onResponseError(_: Dispatcher.DispatchController | null, err: Error): void {
    // Before the answer started, the call itself failed.
    this.reject(err);
    this.settle(err);
  }

  private settle(failure: Error | null): void {
    if (this.over) return;
    this.over = true;
    this.failure = failure;
    this.stopListening?.();
    if (this.consumer) this.flush();
  }

  private flush(): void {
    this.flushQueued = false;
    const consumer = this.consumer;
    if (!consumer || this.closed) return;
    if (this.pending.length > 0) {
      const bytes = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
      this.pending = [];
      consumer.data(bytes);
    }
    // The consumer may have given up while taking the data.
    if (!this.over || this.closed) return;
    this.closed = true;
    if (this.failure) consumer.error(this.failure);
    else consumer.end();
  }

  // Response body

  consume(consumer: BodyConsumer): void {
    if (this.consumer) throw new Error('an upstream body is read once');
    this.consumer = consumer;
    if (this.pending.length > 0 || this.over) {
      this.flushQueued = true;
      queueMicrotask(() => this.flush());
    }
  }

  text(): Promise<string> {
    return new Promise((resolve, reject) => {
      const parts: Buffer[] = [];
      this.consume({
        data: (bytes) => parts.push(bytes),
        end: () => resolve(Buffer.concat(parts).toString()),
        error: reject,
      });
    });
  }

  pause(): void {
    this.controller?.pause();
  }

  resume(): void {
    this.controller?.resume();
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = [];
    this.abort(abortError('The response body was abandoned'));
  }

  get destroyed(): boolean {
    return this.closed;
  }
}

/** Sends one POST through `dispatcher` (a pool of the upstream's origin); resolves once the upstream's status and headers are in. */
export function dispatchCall(
  dispatcher: Dispatcher,
  path: string,
  request: UpstreamSend,
): Promise<UpstreamResponse> {
  return new Promise((resolve, reject) => {
    const call = new UpstreamCall(resolve, reject, request.signal);
    dispatcher.dispatch({ method: 'POST', path, headers: request.headers, body: request.body }, call);
  });
}
