import { createHash } from 'node:crypto';
import {
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS,
  GEN_AI_PREFIX,
} from '../shared/genai-attributes.js';
import type { Attributes, CallContent, JsonValue, SpanView } from './mapping/index.js';
import { spanFacts } from './mapping/index.js';
import type { OtlpLogRecord, OtlpLogsRequest } from './otlp/logs-proto.js';
import { attributesOf, jsonOf } from './span.js';

/**
 * GenAI events sent as OTLP log records (the logs signal), as `@opentelemetry/instrumentation-openai` emits
 * message content: `gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`,
 * `gen_ai.tool.message` and `gen_ai.choice` (the name in `event_name` or the `event.name` attribute, the
 * message in the body), and `gen_ai.client.inference.operation.details` (the ≥ 1.37 attributes
 * `gen_ai.input.messages` / `gen_ai.output.messages` on the record). Each names its model-call span by the
 * record's trace and span ids; the span-event mapping reads them as if they were the span's own events.
 */

/** The event whose attributes are the ≥ 1.37 message attributes of the call. */
export const DETAILS_EVENT = EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS;

/** One GenAI event of a log record, for the span it names. */
export interface LogEvent {
  traceId: string;
  spanId: string;
  key: string;
  name: string;
  time: string;
  ordinal: number;
  attributes: Attributes;
}

export interface LogEventsOf {
  events: LogEvent[];
  /** Records that are GenAI events but name no span, and why. */
  rejected: number;
  errors: string[];
}

const hex = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString('hex') : '');
const ZERO = /^0+$/;
const valid = (id: string, bytes: number) => id.length === bytes * 2 && !ZERO.test(id);

function timeOf(r: OtlpLogRecord): string {
  for (const nanos of [r.timeUnixNano, r.observedTimeUnixNano]) {
    if (nanos === undefined || !/^\d{1,20}$/.test(nanos)) continue;
    const ms = Number(BigInt(nanos) / 1_000_000n);
    if (ms > 0 && ms < 8.64e15) return new Date(ms).toISOString();
  }
  return new Date(0).toISOString();
}

/** The record's event name: `event_name`, else the `event.name` attribute. */
function nameOf(r: OtlpLogRecord, attributes: Attributes): string | null {
  if (r.eventName) return r.eventName;
  const a = attributes['event.name'];
  return typeof a === 'string' && a !== '' ? a : null;
}

/** The record's attributes with its body's members (a string body as `content`). */
function flattened(attributes: Attributes, body: JsonValue): Attributes {
  if (body === null) return attributes;
  if (typeof body === 'object' && !Array.isArray(body)) return { ...attributes, ...body };
  return { ...attributes, content: body };
}

/** The GenAI events of an export request; other log records are taken and ignored. */
export function logEventsOf(request: OtlpLogsRequest): LogEventsOf {
  const out: LogEventsOf = { events: [], rejected: 0, errors: [] };
  const ordinals = new Map<string, number>();
  for (const rl of request.resourceLogs ?? []) {
    for (const sl of rl.scopeLogs ?? []) {
      for (const r of sl.logRecords ?? []) {
        const own = attributesOf(r.attributes);
        const name = nameOf(r, own);
        if (name === null || !name.startsWith(GEN_AI_PREFIX)) continue;
        const traceId = hex(r.traceId);
        const spanId = hex(r.spanId);
        if (!valid(traceId, 16) || !valid(spanId, 8)) {
          out.rejected++;
          const why = `a ${name} record without its span's trace and span ids cannot join its call`;
          if (out.errors.length < 5 && !out.errors.includes(why)) out.errors.push(why);
          continue;
        }
        const attributes = flattened(own, jsonOf(r.body));
        const time = timeOf(r);
        const at = `${traceId}${spanId}`;
        const ordinal = ordinals.get(at) ?? 0;
        ordinals.set(at, ordinal + 1);
        const key = createHash('sha256')
          .update(`${name}\u0000${time}\u0000${ordinal}\u0000${JSON.stringify(attributes)}`)
          .digest('hex')
          .slice(0, 32);
        out.events.push({ traceId, spanId, key, name, time, ordinal, attributes });
      }
    }
  }
  return out;
}

/** Whether an event carries message content (with capture off the instrumentation sends empty bodies). */
function carriesContent(e: { name: string; attributes: Attributes }): boolean {
  const a = e.attributes;
  if (e.name === DETAILS_EVENT) {
    return a[ATTR_GEN_AI_INPUT_MESSAGES] !== undefined || a[ATTR_GEN_AI_OUTPUT_MESSAGES] !== undefined;
  }
  if (a.content !== undefined && a.content !== null) return true;
  const m = a.message;
  if (typeof m === 'object' && m !== null && !Array.isArray(m)) {
    if (m.content !== undefined && m.content !== null) return true;
    return Array.isArray(m.tool_calls) && m.tool_calls.length > 0;
  }
  return Array.isArray(a.tool_calls) && a.tool_calls.length > 0;
}

/**
 * A model call's content read from its span together with the GenAI events received for it as log
 * records, or null when those events carry no content (nothing to add to what the span has).
 */
export function contentWithLogEvents(
  span: SpanView,
  events: { name: string; attributes: Attributes }[],
): CallContent | null {
  const carrying = events.filter(carriesContent);
  if (carrying.length === 0) return null;
  let attributes = span.attributes;
  const asSpanEvents: SpanView['events'] = [];
  for (const e of carrying) {
    if (e.name === DETAILS_EVENT) attributes = { ...attributes, ...e.attributes };
    else asSpanEvents.push({ name: e.name, attributes: e.attributes });
  }
  const call = spanFacts({
    spanId: span.spanId,
    name: span.name,
    attributes,
    events: [...span.events, ...asSpanEvents],
  }).call;
  if (!call || (call.content.input === null && call.content.output === null)) return null;
  return call.content;
}
