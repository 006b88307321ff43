import { randomUUID } from 'node:crypto';
import type { ResolvedConfig } from './config.js';
import { APIConnectionError, APIConnectionTimeoutError, EvalgateError, errorFromResponse } from './errors.js';
import {
  backoffMs,
  causeCode,
  delayAfter,
  failedBeforeSending,
  RETRY_STATUSES,
  sleep,
  UNPROCESSED_STATUSES,
} from './retry.js';

export const CLIENT_VERSION = '0.1.0';

/** Options every method takes as its last argument. */
export interface RequestOptions {
  /** This call's per-attempt timeout (ms): time without any progress (response or upload bytes). */
  timeoutMs?: number;
  /** This call's retries after the first attempt. */
  maxRetries?: number;
  /** Aborts the call (and its waits between attempts); the signal's reason is thrown. */
  signal?: AbortSignal;
  /** Extra headers of this call. */
  headers?: Record<string, string>;
}

export type QueryValue = string | number | boolean | null | undefined;
export type Query = Record<string, QueryValue>;

/** A streamed request body (JSON lines). `open` is called once per attempt; `touch` marks progress. */
export interface Upload {
  contentType: string;
  headers?: Record<string, string>;
  /** Whether `open` may be called again for a retry (a file can be re-read, an iterator cannot). */
  replayable: boolean;
  open(touch: () => void): ReadableStream<Uint8Array>;
}

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Query | undefined;
  json?: unknown;
  upload?: Upload;
  headers?: Record<string, string>;
  /**
   * Whether sending it twice does no harm (default: every method but POST). A non-idempotent request is
   * retried only when the server certainly did not act on it: a connection refused, a 429 or a 503.
   */
  idempotent?: boolean;
  options?: RequestOptions | undefined;
}

interface Attempt {
  response: Response;
  /** Stops the inactivity timer (the caller owns the body from then on). */
  settle(): void;
  /** Whether the timer fired. */
  timedOut(): boolean;
}

export interface TransportConfig extends ResolvedConfig {
  fetch: typeof fetch;
  defaultHeaders: Record<string, string>;
}

/** The request core: URL and headers, per-attempt timeouts, retries, and turning failures into errors. */
export class Transport {
  constructor(readonly config: TransportConfig) {}

  /** The URL of `path` with the query parameters that are set. */
  url(path: string, query?: Query): string {
    const url = new URL(this.config.baseURL + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
    }
    return url.toString();
  }

  /** Sends the request and returns its parsed JSON body; throws an EvalgateError subclass on failure. */
  async request<T>(spec: RequestSpec): Promise<T> {
    return this.send(spec, async (attempt, requestId) => {
      const text = await attempt.response.text();
      attempt.settle();
      return parseBody(attempt.response, text, requestId) as T;
    });
  }

  /** Sends the request and hands over the successful response with its body unread (server-sent events). */
  async stream(spec: RequestSpec): Promise<Response> {
    return this.send(spec, async (attempt) => {
      attempt.settle();
      return attempt.response;
    });
  }

  private async send<T>(
    spec: RequestSpec,
    read: (attempt: Attempt, requestId: string) => Promise<T>,
  ): Promise<T> {
    const maxRetries = spec.options?.maxRetries ?? this.config.maxRetries;
    const idempotent = spec.idempotent ?? spec.method !== 'POST';
    const replayable = spec.upload ? spec.upload.replayable : true;
    const signal = spec.options?.signal;
    const requestId = randomUUID();
    for (let attempt = 0; ; attempt++) {
      const retriesLeft = attempt < maxRetries && replayable;
      let current: Attempt;
      try {
        current = await this.attempt(spec, requestId);
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        const failure = connectionError(err, requestId, spec.options?.timeoutMs ?? this.config.timeoutMs);
        const again =
          retriesLeft &&
          (idempotent || (!(failure instanceof APIConnectionTimeoutError) && failedBeforeSending(err)));
        if (!again) throw failure;
        await sleep(backoffMs(attempt), signal);
        continue;
      }
      const { response } = current;
      if (response.ok) {
        try {
          return await read(current, requestId);
        } catch (err) {
          current.settle();
          if (signal?.aborted) throw signal.reason;
          if (err instanceof EvalgateError) throw err;
          // The body broke off (or stalled): a read may be sent again, anything else may have acted.
          const failure = connectionError(
            err,
            requestId,
            spec.options?.timeoutMs ?? this.config.timeoutMs,
            current,
          );
          if (!(retriesLeft && idempotent)) throw failure;
          await sleep(backoffMs(attempt), signal);
          continue;
        }
      }
      const text = await response.text().catch(() => '');
      current.settle();
      const error = errorFromResponse(
        response.status,
        response.headers,
        parseLoose(response, text),
        requestIdOf(response, requestId),
      );
      const delay =
        retriesLeft &&
        RETRY_STATUSES.has(response.status) &&
        (idempotent || UNPROCESSED_STATUSES.has(response.status))
          ? delayAfter(response.headers, attempt)
          : null;
      if (delay === null) throw error;
      await sleep(delay, signal);
    }
  }

  private async attempt(spec: RequestSpec, requestId: string): Promise<Attempt> {
    const timeoutMs = spec.options?.timeoutMs ?? this.config.timeoutMs;
    const controller = new AbortController();
    let fired = false;
    let timer: NodeJS.Timeout | null = null;
    const arm = () => {
      if (timer !== null) clearTimeout(timer);
      timer = setTimeout(() => {
        fired = true;
        controller.abort(new Error(`No response within ${timeoutMs} ms`));
      }, timeoutMs);
    };
    const settle = () => {
      if (timer !== null) clearTimeout(timer);
      timer = null;
    };
    const signals = [controller.signal, ...(spec.options?.signal ? [spec.options.signal] : [])];
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization: `Bearer ${this.config.apiKey}`,
      'user-agent': `evalgate-client/${CLIENT_VERSION} node/${process.versions.node}`,
      'x-request-id': requestId,
      ...this.config.defaultHeaders,
      ...spec.headers,
      ...spec.options?.headers,
    };
    const init: RequestInit & { duplex?: 'half' } = {
      method: spec.method,
      headers,
      signal: AbortSignal.any(signals),
    };
    let upload: ReadableStream<Uint8Array> | null = null;
    if (spec.upload) {
      headers['content-type'] = spec.upload.contentType;
      Object.assign(headers, spec.upload.headers);
      upload = spec.upload.open(arm);
      init.body = upload;
      init.duplex = 'half';
      // Following redirects makes fetch keep a copy of a streamed body to send again: every chunk of an
      // upload would stay in memory to the end. The API never redirects.
      init.redirect = 'error';
    } else if (spec.json !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(spec.json);
    }
    arm();
    try {
      const response = await this.config.fetch(this.url(spec.path, spec.query), init);
      // The timer keeps running while the body is read, unless the caller settles it (streams).
      return { response, settle, timedOut: () => fired };
    } catch (err) {
      settle();
      // Closes the source (a file) if fetch failed before reading the body to its end.
      await upload?.cancel().catch(() => {});
      throw fired ? new TimedOut(err) : err;
    }
  }
}

/** Marks a fetch failure caused by the inactivity timer. */
class TimedOut extends Error {
  constructor(cause: unknown) {
    super('timed out', { cause });
  }
}

function requestIdOf(response: Response, sent: string): string {
  return response.headers.get('x-request-id') ?? sent;
}

function connectionError(
  err: unknown,
  requestId: string,
  timeoutMs: number,
  attempt?: Attempt,
): EvalgateError {
  if (err instanceof EvalgateError) return err;
  if (err instanceof TimedOut || attempt?.timedOut()) {
    return new APIConnectionTimeoutError(`Request timed out after ${timeoutMs} ms without progress`, {
      requestId,
      cause: err instanceof TimedOut ? err.cause : err,
    });
  }
  const code = causeCode(err);
  const reason = (err as { cause?: { message?: string } })?.cause?.message ?? (err as Error)?.message;
  return new APIConnectionError(`Connection error${code ? ` (${code})` : ''}: ${reason ?? String(err)}`, {
    requestId,
    cause: err,
  });
}

function isJson(response: Response): boolean {
  return /\bjson\b/.test(response.headers.get('content-type') ?? '');
}

/** The body of an error response: JSON when it is JSON, its text otherwise (a proxy's HTML page). */
function parseLoose(response: Response, text: string): unknown {
  if (!isJson(response) || text === '') return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function parseBody(response: Response, text: string, requestId: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new EvalgateError(`Expected a JSON response from ${response.url}, got: ${text.slice(0, 200)}`, {
      status: response.status,
      code: 'invalid_response',
      requestId: requestIdOf(response, requestId),
    });
  }
}
