import type { ErrorBody } from '../shared/errors.js';

/** One model call to record as a task log of a container (the gateway's traffic). */
export interface TaskLogRecord {
  /** Assigned by the caller (`log_…`), so the id can be returned before the record is written. */
  id: string;
  projectId: string;
  containerId: string;
  model: string;
  /** Request messages; taken from the request when left out. */
  input?: unknown;
  /** Response text (or assembled stream text); null on failure. Derived from `responseSse` when it is given. */
  output: string | null;
  request?: unknown;
  /** The request as the client sent it (JSON text): stored as is, and its `messages` are the input. */
  requestText?: string;
  response?: unknown;
  /** The response already as JSON text (e.g. the upstream's own bytes): stored as is, not serialised again. */
  responseText?: string;
  /**
   * A streamed answer's event stream as the client received it: the writer assembles its chunks into
   * the recorded completion, off the request path.
   */
  responseSse?: string;
  usage: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
  latencyMs: number;
  /** USD. */
  cost: number;
  status: 'success' | 'error';
  error: ErrorBody | null;
  metadata: Record<string, unknown>;
  /** ISO time of the call. */
  createdAt: string;
  /** W3C trace id (32 lowercase hex) the call belongs to, from a `traceparent` or an ingested span. */
  traceId?: string;
  /** W3C span id (16 lowercase hex) of the call's own span. */
  spanId?: string;
  /** W3C span id of the span the call is a child of (the caller's, from a `traceparent`). */
  parentSpanId?: string;
  /** The session the call belongs to, when known before it is written. */
  sessionId?: string;
  /**
   * A key naming the call's session (the `X-Evalgate-Session` header, an ingested span's conversation
   * id): the writer assigns the call to the container's session of that key, started on first use.
   */
  sessionKey?: string;
  /** The stored prompt (`prm_…`) and version the call was rendered from. */
  promptId?: string;
  promptVersion?: number;
  /**
   * The call's own span, written with its task log when the call has trace and span ids (the gateway's
   * calls; a task log made of an ingested span has its span stored already and carries none).
   */
  span?: CallSpan;
}

/** What a gateway call's span says beyond its task log's columns, decided where the call was made. */
export interface CallSpan {
  /** The GenAI operation (`chat`, `embeddings`, …): the span's name is `<operation> <model>`. */
  operation: string;
  /** Every guard verdict of the call, in the order they were reached. */
  guards: GuardNote[];
}

/** One guard verdict of a call, as its span records it (a score named after the guard). */
export interface GuardNote {
  /** The check's name: the score's name. */
  guard: string;
  stage: string;
  verdict: string;
  score: number | null;
  /** Epoch milliseconds the verdict was reached. */
  at: number;
}

/** The id prefix of task logs made of ingested model-call spans (`log_otlp…`, derived from the span). */
export const INGESTED_LOG_PREFIX = 'log_otlp';

/** What a committed batch tells its listener (the monitor selector) of each task log it stored. */
export interface CommittedLog {
  id: string;
  projectId: string;
  containerId: string;
  /** Its place in the container's logs: a batch holds consecutive seqs of each container. */
  seq: number;
  model: string;
  /** The metadata as stored (JSON text). */
  metadata: string;
  createdAt: string;
}

export interface LogWriterStats {
  accepted: number;
  written: number;
  /**
   * Records dropped: past the bound (buffer full, e.g. through a long database outage), refused by the
   * database for another reason than an outage, of a container deleted meanwhile, or still held at close.
   */
  failed: number;
  /** Records accepted and not yet written, those held through a database outage included. */
  buffered: number;
  /** Of those, records past the bound kept only in the journal until the store has room (the capture processor). */
  spilled?: number;
}

/**
 * Accepts records without waiting, writes them in batches (size or time, whichever first), holds them
 * through a database outage and retries, applies back-pressure with a bounded buffer (dropping and
 * counting past it), flushes on close.
 */
export interface LogWriter {
  write(record: TaskLogRecord): void;
  /**
   * `write` with the record's JSON text already made (the spool's line): a writer on another thread
   * hands that text over as it is instead of copying the object (parsed once, on its side).
   */
  writeJson?(record: TaskLogRecord, json: string): void;
  /**
   * A streamed call has started and its log id is with the client: a writer with a spool keeps `record`
   * (the call as interrupted), stored if the process ends before the call's own record is written.
   */
  begin?(record: TaskLogRecord): void;
  /**
   * Resolves when everything accepted so far has been written or counted as failed, or once the database
   * has failed an attempt (an outage): what it holds then stays held and is retried.
   */
  flush(): Promise<void>;
  /**
   * Whether a record with this id was accepted and may not be written yet (answered at once): a reader
   * that misses a row flushes only for such an id. False for an id it never accepted or has settled.
   */
  holds?(id: string): boolean;
  stats(): LogWriterStats;
  /** Flushes, then refuses further writes; what the database still cannot take then is counted as failed. */
  close(): Promise<void>;
}
