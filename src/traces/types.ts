/**
 * The read API of the trace store: `GET /v1/traces` (a page of trace summaries) and
 * `GET /v1/traces/{trace_id}` (one trace with its spans). The TypeBox schemas are what the server
 * validates and documents with; the client, CLI and dashboard take their types from them.
 */
import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, Nullable, PageQuery } from '../http/schemas.js';

const Iso = (description: string) => Type.String({ format: 'date-time', description });

/** Token counts of a model call, or summed over a trace. */
export const TraceUsage = Type.Object({
  input_tokens: Type.Integer({ minimum: 0 }),
  output_tokens: Type.Integer({ minimum: 0 }),
  total_tokens: Type.Integer({ minimum: 0 }),
});
export type TraceUsage = Static<typeof TraceUsage>;

/** What a whole trace adds up to. */
export const TraceTotals = Type.Object({
  span_count: Type.Integer({ minimum: 0 }),
  error_count: Type.Integer({ minimum: 0, description: 'Spans with status error' }),
  model_call_count: Type.Integer({ minimum: 0, description: 'Spans that are model calls' }),
  usage: TraceUsage,
  cost: Type.Number({ description: 'USD, over the model calls' }),
});
export type TraceTotals = Static<typeof TraceTotals>;

/** Where a span came from: sent over OTLP, or a call through this gateway (a task log with the trace id). */
export const SPAN_SOURCES = ['otlp', 'gateway'] as const;
export type SpanSource = (typeof SPAN_SOURCES)[number];

/** OTLP's span kinds, by their short names. */
export const SPAN_KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const;
export type SpanKind = (typeof SPAN_KINDS)[number];

/** OTLP's status codes, by their short names. */
export const SPAN_STATUS_CODES = ['unset', 'ok', 'error'] as const;
export type SpanStatusCode = (typeof SPAN_STATUS_CODES)[number];

/** The model call a span stands for (GenAI, OpenInference, AI SDK or OpenLLMetry attributes; or a gateway call). */
export const SpanModelCall = Type.Object({
  task_log_id: Nullable(Type.String({ description: 'The task log recorded for this call' })),
  provider: Nullable(Type.String({ description: 'gen_ai.provider.name / gen_ai.system, e.g. openai' })),
  model: Nullable(Type.String({ description: 'The response model, else the request model' })),
  request_model: Nullable(Type.String()),
  response_model: Nullable(Type.String()),
  usage: TraceUsage,
  cost: Type.Number({ description: 'USD, priced from the model catalog' }),
  content_captured: Type.Boolean({
    description: 'False when the emitter recorded no messages (content capture off)',
  }),
});
export type SpanModelCall = Static<typeof SpanModelCall>;

export const SpanEvent = Type.Object({
  name: Type.String(),
  time: Type.String({ description: 'ISO time' }),
  attributes: FreeObject(),
});
export type SpanEvent = Static<typeof SpanEvent>;

/** One span of a trace, as the detail lists them: depth-first from the roots, children by start time. */
export const TraceSpan = Type.Object({
  object: Type.Literal('trace.span'),
  span_id: Type.String({ description: '16 lowercase hex digits' }),
  parent_span_id: Nullable(
    Type.String({ description: 'Null for a root (or a span whose parent never arrived)' }),
  ),
  depth: Type.Integer({ minimum: 0, description: 'Distance from its root in the tree' }),
  source: Type.Enum([...SPAN_SOURCES]),
  name: Type.String(),
  kind: Type.Enum([...SPAN_KINDS]),
  operation: Nullable(
    Type.String({
      description: 'gen_ai.operation.name or its equivalent: chat, invoke_agent, execute_tool, …',
    }),
  ),
  container_id: Nullable(Type.String()),
  session_id: Nullable(Type.String()),
  started_at: Type.String({ description: 'ISO time' }),
  ended_at: Type.String({ description: 'ISO time' }),
  offset_ms: Type.Number({ description: 'Start, in ms after the start of the trace' }),
  duration_ms: Type.Number({ minimum: 0 }),
  status: Type.Object({ code: Type.Enum([...SPAN_STATUS_CODES]), message: Nullable(Type.String()) }),
  attributes: FreeObject('The span attributes, OTLP values as JSON values'),
  events: Type.Array(SpanEvent),
  resource: FreeObject('The resource attributes (service.name, …)'),
  scope: Nullable(Type.Object({ name: Type.String(), version: Nullable(Type.String()) })),
  model_call: Nullable(SpanModelCall),
});
export type TraceSpan = Static<typeof TraceSpan>;

const summaryFields = {
  id: Type.String({ description: 'The trace id, 32 lowercase hex digits' }),
  project_id: Type.String(),
  container_id: Nullable(Type.String({ description: 'The container of its first span' })),
  name: Nullable(Type.String({ description: 'The root span name' })),
  service_name: Nullable(Type.String({ description: "The root span's service.name" })),
  session_id: Nullable(
    Type.String({ description: 'The session (its sess_ id) of its earliest call in one; null: none' }),
  ),
  started_at: Type.String({ description: 'ISO time of its earliest span' }),
  ended_at: Type.String({ description: 'ISO time of its latest span end' }),
  duration_ms: Type.Number({ minimum: 0 }),
  models: Type.Array(Type.String(), { description: 'Models of its model calls, distinct' }),
  totals: TraceTotals,
};

/** A trace in the list. */
export const TraceSummary = Type.Object({ object: Type.Literal('trace'), ...summaryFields });
export type TraceSummary = Static<typeof TraceSummary>;

export const TraceList = ListOf(TraceSummary);
export type TraceList = Static<typeof TraceList>;

/** A trace with its spans. */
export const Trace = Type.Object({
  object: Type.Literal('trace'),
  ...summaryFields,
  spans: Type.Array(TraceSpan),
});
export type Trace = Static<typeof Trace>;

export const ListTracesQuery = Type.Object({
  ...PageQuery,
  container: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'Only traces of this container (id or label)' }),
  ),
  since: Type.Optional(Iso('Only traces started at or after this time')),
  until: Type.Optional(Iso('Only traces started before this time')),
  session: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 300,
      description: 'Only traces with a call in this session: its sess_ id, or the key that named it',
    }),
  ),
  model: Type.Optional(
    Type.String({ minLength: 1, maxLength: 300, description: 'Only traces with a model call of this model' }),
  ),
  errors: Type.Optional(
    Type.Boolean({ description: 'true: only traces with an error span; false: only without' }),
  ),
  min_spans: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      description:
        'Only traces of at least this many spans (2 hides the one-span traces of gateway calls made without a traceparent)',
    }),
  ),
});
export type ListTracesQuery = Static<typeof ListTracesQuery>;

export const TraceIdParam = Type.Object({
  trace_id: Type.String({ minLength: 1, maxLength: 200, description: 'The trace id (32 hex digits)' }),
});
