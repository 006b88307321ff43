import type { Kysely } from 'kysely';
import type { CallTrace } from '../capture/traceparent.js';
import type { GuardNote, LogWriter, TaskLogRecord } from '../capture/types.js';
import { loadContainer } from '../catalog/containers/resolve.js';
import type { Database } from '../db/schema.js';
import type { ResolvedModel } from '../llm/models/types.js';
import type { ChatRequest } from '../llm/types.js';
import { ApiError, type ErrorBody } from '../shared/errors.js';
import { newId } from '../shared/ids.js';

const CONTAINER_CACHE_MS = 60_000;

/** How long a resolved model or container is still used while the database cannot be asked. */
export const OUTAGE_GRACE_MS = 3_600_000;

interface Cached<T> {
  value: Promise<T>;
  until: number;
}

/**
 * A time-bounded memo of async look-ups; failures are not kept, concurrent misses share one look-up. A
 * look-up that fails for a reason other than an `ApiError` (the database is away) falls back on the last
 * value loaded for the key, if it is younger than OUTAGE_GRACE_MS: calls go on being served.
 */
function memo<T>(ttlMs: number, load: (projectId: string, ref: string) => Promise<T>) {
  const entries = new Map<string, Cached<T>>();
  const last = new Map<string, { value: T; at: number }>();
  const loadKept = async (key: string, projectId: string, ref: string): Promise<T> => {
    try {
      const value = await load(projectId, ref);
      if (last.size > 10_000) last.clear();
      last.set(key, { value, at: Date.now() });
      return value;
    } catch (err) {
      const kept = last.get(key);
      if (err instanceof ApiError || !kept || kept.at + OUTAGE_GRACE_MS <= Date.now()) throw err;
      return kept.value;
    }
  };
  return (projectId: string, ref: string): Promise<T> => {
    const key = `${projectId}\u0000${ref}`;
    const now = Date.now();
    const hit = entries.get(key);
    if (hit && hit.until > now) return hit.value;
    const value = loadKept(key, projectId, ref);
    if (ttlMs > 0) {
      if (entries.size > 10_000) entries.clear();
      entries.set(key, { value, until: now + ttlMs });
      value.catch(() => {
        if (entries.get(key)?.value === value) entries.delete(key);
      });
    }
    return value;
  };
}

/** What the route knows of a call before it is made. */
export interface RecordedCall {
  logId: string;
  projectId: string;
  containerId: string;
  request: ChatRequest;
  /** The request's JSON text as the client sent it, when at hand (stored instead of serialising `request`). */
  requestText: string | null;
  /** Epoch milliseconds. */
  startedAt: number;
  /** The `X-Evalgate-Session` header: the session the call is assigned to (the writer does it). */
  sessionKey?: string | null;
  /** The trace the call is a span of (the caller's `traceparent`, or its own). */
  trace?: CallTrace;
  /** The GenAI operation of the call's route (its span's operation). */
  operation: string;
  /** The stored prompt version the request was rendered from. */
  prompt?: { id: string; version: number };
}

/** How the call went, as the task log keeps it. */
export interface CallOutcome {
  model: string;
  output: string | null;
  /** The input as chat messages, when the request is not itself a chat completion (other dialects). */
  input?: unknown;
  /** The answer's JSON text (the upstream's bytes or their translation); none for a failed call. */
  responseText?: string;
  /** A streamed answer's event stream as sent: the log writer assembles it (off the request path). */
  responseSse?: string;
  usage: TaskLogRecord['usage'];
  latencyMs: number;
  cost: number;
  error: ErrorBody | null;
  metadata: Record<string, unknown>;
  /** The guards' verdicts on the call (its span shows them). */
  guards?: GuardNote[];
}

export interface GatewayStats {
  /** Calls that could not be recorded because their container could not be looked up (database down). */
  unrecorded: number;
}

/**
 * A call's task log with what is known when it starts, as an interrupted call until its outcome is set.
 * Every field is assigned in one object literal and set in place after (no spreads of optional parts):
 * the record is made on every recorded call's path.
 */
function baseRecord(call: RecordedCall, model: string): TaskLogRecord {
  const record: TaskLogRecord = {
    id: call.logId,
    projectId: call.projectId,
    containerId: call.containerId,
    model,
    output: null,
    usage: null,
    latencyMs: 0,
    cost: 0,
    status: 'error',
    error: { code: 'interrupted', message: 'The server stopped before the call finished' },
    metadata: {},
    createdAt: new Date(call.startedAt).toISOString(),
  };
  if (call.requestText === null) record.request = call.request;
  else record.requestText = call.requestText;
  const trace = call.trace;
  if (trace) {
    record.traceId = trace.traceId;
    record.spanId = trace.spanId;
    if (trace.parentSpanId !== undefined) record.parentSpanId = trace.parentSpanId;
  }
  return record;
}
/** What the chat-completions route needs besides the provider layer: model and container look-ups, recording. */
export interface Gateway {
  readonly recording: boolean;
  /** A resolved model, reused for `modelCacheMs`. */
  model(projectId: string, ref: string): Promise<ResolvedModel>;
  /**
   * The container a call is recorded in (the header's id or label, else the project's `default`,
   * created on first use), or null when the call cannot be recorded (recording off, database down).
   * Throws 404 for a container the project does not have. Cached, so steady traffic adds no query.
   */
  container(projectId: string, ref: string | null): Promise<string | null>;
  newLogId(): string;
  /** Hands the call to the log writer; never throws, never waits. */
  record(call: RecordedCall, outcome: CallOutcome): void;
  /**
   * A streamed call is starting (its log id goes out before its answer): the writer's spool keeps it as
   * interrupted until `record` replaces it, so that a kill of the process leaves a task log for that id.
   */
  begin(call: RecordedCall): void;
  stats(): GatewayStats;
}

export interface GatewayOptions {
  db: Kysely<Database>;
  logWriter: LogWriter | null;
  recording: boolean;
  modelCacheMs: number;
  resolveModel(projectId: string, ref: string): Promise<ResolvedModel>;
}

export function createGateway(options: GatewayOptions): Gateway {
  const { db, logWriter } = options;
  const recording = options.recording && logWriter !== null;
  const stats: GatewayStats = { unrecorded: 0 };
  const models = memo(options.modelCacheMs, options.resolveModel);
  const containers = memo(CONTAINER_CACHE_MS, (projectId, ref) =>
    loadContainer(db, projectId, ref === '' ? null : ref),
  );

  return {
    recording,
    model: models,
    async container(projectId, ref) {
      if (!recording) return null;
      try {
        return await containers(projectId, ref ?? '');
      } catch (err) {
        if (err instanceof ApiError) throw err;
        // The database is unreachable: serve the call unrecorded rather than fail it.
        stats.unrecorded++;
        return null;
      }
    },
    newLogId: () => newId('log'),
    record(call, outcome) {
      if (!logWriter) return;
      const record = baseRecord(call, outcome.model);
      record.output = outcome.output;
      if (outcome.input !== undefined) record.input = outcome.input;
      // Texts and chunks rather than objects: cheap to hand to the writer's thread, serialised there.
      record.responseText = outcome.responseText;
      record.responseSse = outcome.responseSse;
      record.usage = outcome.usage;
      record.latencyMs = Math.round(outcome.latencyMs * 1000) / 1000;
      record.cost = outcome.cost;
      record.status = outcome.error ? 'error' : 'success';
      record.error = outcome.error;
      record.metadata = outcome.metadata;
      if (call.sessionKey) record.sessionKey = call.sessionKey;
      if (call.prompt) {
        record.promptId = call.prompt.id;
        record.promptVersion = call.prompt.version;
      }
      record.span = { operation: call.operation, guards: outcome.guards ?? [] };
      try {
        logWriter.write(record);
      } catch {
        stats.unrecorded++;
      }
    },
    begin(call) {
      if (!logWriter?.begin) return;
      try {
        const record = baseRecord(call, call.request.model);
        record.metadata = { stream: true };
        record.span = { operation: call.operation, guards: [] };
        logWriter.begin(record);
      } catch {
        // Kept without it: the call's own record still follows.
      }
    },
    stats: () => ({ ...stats }),
  };
}
