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

/** Nanoseconds since the epoch (decimal text) as ms, or null when absent or out of range. */
function msOf(nanos: string | undefined): number | null {
  if (nanos === undefined || !/^\d{1,20}$/.test(nanos)) return null;
  const ms = Number(BigInt(nanos) / 1000n) / 1000;
  return ms > 0 && ms < 8.64e15 ? ms : null;
}

/** An OTLP span in the internal shape, or why it is rejected. */
export function toIngested(
  span: OtlpSpan,
  resource: Record<string, JsonValue>,
  scope: { name?: string; version?: string } | undefined,
): IngestedSpan | string {
  const traceId = hex(span.traceId);
  const spanId = hex(span.spanId);
  if (!validId(traceId, 16)) return 'invalid trace id';
  if (!validId(spanId, 8)) return 'invalid span id';
  const parent = hex(span.parentSpanId);
  const start = msOf(span.startTimeUnixNano);
  if (start === null) return 'missing start time';
  const end = Math.max(start, msOf(span.endTimeUnixNano) ?? start);
  const attributes = attributesOf(span.attributes);
  const events = (span.events ?? []).map((e) => ({
    name: e.name ?? '',
    time: new Date(msOf(e.timeUnixNano) ?? start).toISOString(),
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
