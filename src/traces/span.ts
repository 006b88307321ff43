import type { JsonValue, SpanFacts } from './mapping/index.js';
import { spanFacts } from './mapping/index.js';
import type { OtlpAnyValue, OtlpKeyValue, OtlpSpan } from './otlp/proto.js';
import { SPAN_KINDS, SPAN_STATUS_CODES, type SpanKind, type SpanStatusCode } from './types.js';

/** One span as the store keeps it, whichever convention it came in. */
export interface IngestedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: SpanKind;
  startedAt: string;
  endedAt: string;
  durationMs: number;
  status: { code: SpanStatusCode; message: string | null };
  attributes: Record<string, JsonValue>;
  events: { name: string; time: string; attributes: Record<string, JsonValue> }[];
  resource: Record<string, JsonValue>;
  scope: { name: string; version: string | null } | null;
  facts: SpanFacts;
}

/** One span on its way to the store. */
export interface PendingSpan {
  projectId: string;
  containerId: string | null;
  span: IngestedSpan;
}

const MAX_DEPTH = 16;

export function jsonOf(v: OtlpAnyValue | undefined, depth = 0): JsonValue {
  if (!v || depth > MAX_DEPTH) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) {
    const n = Number(v.intValue);
    return Number.isSafeInteger(n) ? n : v.intValue;
  }
  if (v.doubleValue !== undefined)
    return Number.isFinite(v.doubleValue) ? v.doubleValue : String(v.doubleValue);
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map((x) => jsonOf(x, depth + 1));
  if (v.kvlistValue !== undefined) return attributesOf(v.kvlistValue.values, depth + 1);
  if (v.bytesValue !== undefined) return Buffer.from(v.bytesValue).toString('base64');
  return null;
}

export function attributesOf(list: OtlpKeyValue[] | undefined, depth = 0): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const kv of list ?? []) {
    if (typeof kv.key !== 'string' || kv.key === '') continue;
    out[kv.key] = jsonOf(kv.value, depth);
  }
  return out;
}

const hex = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString('hex') : '');
const ZERO = /^0+$/;

function validId(id: string, bytes: number): boolean {
  return id.length === bytes * 2 && !ZERO.test(id);
}

/** How far ahead of the server's clock a span may be stamped (clock skew), in ms. */
export const MAX_FUTURE_MS = 86_400_000;
/** fixed64 holds a negative int64 as 2^64 − n: every value from 2^63 up is one (or past the year 2262). */
const NEGATIVE_FROM = 2n ** 63n;

/**
 * An OTLP timestamp (fixed64 nanoseconds since the epoch, decimal text) as ms: null when absent or 0,
 * why not when out of range. Bounded so that no span sorts first for ever: not negative (a signed value
 * sent as fixed64 arrives as 2^64 − n, year 2554), not more than a day ahead of the server's clock.
 */
function timeOf(nanos: string | undefined, nowMs: number): number | null | 'negative' | 'future' {
  if (nanos === undefined || !/^\d{1,20}$/.test(nanos)) return null;
  const n = BigInt(nanos);
  if (n >= NEGATIVE_FROM) return 'negative';
  const ms = Number(n / 1000n) / 1000;
  if (ms > nowMs + MAX_FUTURE_MS) return 'future';
  return ms > 0 ? ms : null;
}

const OUT_OF_RANGE = {
  negative: 'is negative (before 1970-01-01)',
  future: 'is more than a day ahead of the server clock',
} as const;

/** An event's time; one absent or out of range is the span's start (the span is kept). */
function eventTime(nanos: string | undefined, start: number, nowMs: number): number {
  const t = timeOf(nanos, nowMs);
  return typeof t === 'number' ? t : start;
}

/** An OTLP span in the internal shape, or why it is rejected. */
export function toIngested(
  span: OtlpSpan,
  resource: Record<string, JsonValue>,
  scope: { name?: string; version?: string } | undefined,
  nowMs = Date.now(),
): IngestedSpan | string {
  const traceId = hex(span.traceId);
  const spanId = hex(span.spanId);
  if (!validId(traceId, 16)) return 'invalid trace id';
  if (!validId(spanId, 8)) return 'invalid span id';
  const parent = hex(span.parentSpanId);
  const start = timeOf(span.startTimeUnixNano, nowMs);
  if (start === null) return 'missing start time';
  if (typeof start === 'string') return `start time ${OUT_OF_RANGE[start]}`;
  const ended = timeOf(span.endTimeUnixNano, nowMs);
  if (typeof ended === 'string') return `end time ${OUT_OF_RANGE[ended]}`;
  const end = Math.max(start, ended ?? start);
  const attributes = attributesOf(span.attributes);
  const events = (span.events ?? []).map((e) => ({
    name: e.name ?? '',
    time: new Date(eventTime(e.timeUnixNano, start, nowMs)).toISOString(),
    attributes: attributesOf(e.attributes),
  }));
  const name = span.name ?? '';
  const code = SPAN_STATUS_CODES[span.status?.code ?? 0] ?? 'unset';
  return {
    traceId,
    spanId,
    parentSpanId: validId(parent, 8) ? parent : null,
    name,
    kind: SPAN_KINDS[span.kind ?? 0] ?? 'unspecified',
    startedAt: new Date(start).toISOString(),
    endedAt: new Date(end).toISOString(),
    durationMs: Math.round((end - start) * 1000) / 1000,
    status: { code, message: span.status?.message ? span.status.message : null },
    attributes,
    events,
    resource,
    scope:
      scope?.name !== undefined || scope?.version !== undefined
        ? { name: scope.name ?? '', version: scope.version ? scope.version : null }
        : null,
    facts: spanFacts({ spanId, name, attributes, events }),
  };
}
