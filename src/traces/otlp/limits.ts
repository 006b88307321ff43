import protobuf from 'protobufjs';

/**
 * Bounds on one OTLP export request, checked before it is decoded (a wire-level scan of protobuf, a walk
 * of parsed OTLP/JSON), so that no request costs more than they allow whatever its compressed size: a
 * request past one is refused whole (413) with the limit in the reason.
 */
export interface OtlpLimits {
  /** Spans of a trace request, log records of a logs request (`EVALGATE_OTLP_MAX_SPANS`). */
  maxItems: number;
  /**
   * Key-value pairs of one list: a span's, resource's, scope's, event's, link's or log record's
   * attributes, or one `kvlistValue` (`EVALGATE_OTLP_MAX_ATTRIBUTES`; OpenTelemetry SDKs' default is 128).
   */
  maxAttributes: number;
  /** Events, and links, of one span (`EVALGATE_OTLP_MAX_EVENTS`; the SDKs' default is 128). */
  maxEvents: number;
  /** Nesting of `arrayValue` and `kvlistValue` inside one attribute's value (`EVALGATE_OTLP_MAX_DEPTH`). */
  maxDepth: number;
  /** Bytes of one string or bytes value, attribute keys and names included (`EVALGATE_OTLP_MAX_VALUE_BYTES`). */
  maxValueBytes: number;
  /** Attribute values of the whole request, array elements and nested ones included (`EVALGATE_OTLP_MAX_VALUES`). */
  maxValues: number;
}

export const DEFAULT_OTLP_LIMITS: OtlpLimits = {
  maxItems: 100_000,
  maxAttributes: 128,
  maxEvents: 128,
  maxDepth: 16,
  maxValueBytes: 1024 * 1024,
  maxValues: 500_000,
};

/** A request past one of the limits: refused whole, 413, with this reason. */
export class OtlpLimitError extends Error {
  override name = 'OtlpLimitError';
}

/** Which request a scan walks. */
/** An OTLP signal this server takes: spans (`/v1/traces`) or log records (`/v1/logs`). */
export type OtlpSignal = 'spans' | 'logs';

/** What a scan counted (for the caller's choice of decoding inline or on a thread). */
export interface ScanCounts {
  items: number;
  values: number;
}

const ENV: Record<keyof OtlpLimits, string> = {
  maxItems: 'EVALGATE_OTLP_MAX_SPANS',
  maxAttributes: 'EVALGATE_OTLP_MAX_ATTRIBUTES',
  maxEvents: 'EVALGATE_OTLP_MAX_EVENTS',
  maxDepth: 'EVALGATE_OTLP_MAX_DEPTH',
  maxValueBytes: 'EVALGATE_OTLP_MAX_VALUE_BYTES',
  maxValues: 'EVALGATE_OTLP_MAX_VALUES',
};

/** The counters of one request's walk, shared by the protobuf scan and the JSON walk. */
export class Budget {
  readonly counts: ScanCounts = { items: 0, values: 0 };
  constructor(
    readonly limits: OtlpLimits,
    readonly signal: OtlpSignal,
  ) {}

  private over(limit: keyof OtlpLimits, what: string): never {
    throw new OtlpLimitError(
      `The export request has ${what} (more than ${this.limits[limit]}, ${ENV[limit]}); nothing of it was taken`,
    );
  }

  item(): void {
    if (++this.counts.items > this.limits.maxItems)
      this.over('maxItems', this.signal === 'spans' ? 'too many spans' : 'too many log records');
  }

  /** One more key-value pair (or array element): `n` is its place in its own list (1-based). */
  value(n: number, inArray: boolean): void {
    if (!inArray && n > this.limits.maxAttributes)
      this.over('maxAttributes', 'too many attributes in one list');
    if (++this.counts.values > this.limits.maxValues) this.over('maxValues', 'too many attribute values');
  }

  event(n: number, what: 'events' | 'links'): void {
    if (n > this.limits.maxEvents) this.over('maxEvents', `too many ${what} in one span`);
  }

  depth(d: number): void {
    if (d > this.limits.maxDepth) this.over('maxDepth', 'attribute values nested too deep');
  }

  bytes(n: number): void {
    if (n > this.limits.maxValueBytes) this.over('maxValueBytes', 'a string or bytes value too large');
  }
}

/**
 * The shape of a message for the scan: per field number, the sub-message it holds (walked), `bytes` for a
 * length-delimited scalar whose size is bounded; what is not listed is skipped.
 */
type Field =
  | { kind: 'message'; shape: Shape; count?: 'item' | 'events' | 'links' }
  | { kind: 'attributes' }
  | { kind: 'value' }
  | { kind: 'bytes' };
type Shape = Record<number, Field>;

const BYTES: Field = { kind: 'bytes' };
const ATTRIBUTES: Field = { kind: 'attributes' };
const RESOURCE: Shape = { 1: ATTRIBUTES };
const SCOPE: Shape = { 1: BYTES, 2: BYTES, 3: ATTRIBUTES };
const EVENT: Shape = { 2: BYTES, 3: ATTRIBUTES };
const LINK: Shape = { 1: BYTES, 2: BYTES, 3: BYTES, 4: ATTRIBUTES };
const SPAN: Shape = {
  1: BYTES,
  2: BYTES,
  3: BYTES,
  4: BYTES,
  5: BYTES,
  9: ATTRIBUTES,
  11: { kind: 'message', shape: EVENT, count: 'events' },
  13: { kind: 'message', shape: LINK, count: 'links' },
  15: { kind: 'message', shape: { 2: BYTES } },
};
const LOG_RECORD: Shape = { 3: BYTES, 5: { kind: 'value' }, 6: ATTRIBUTES, 9: BYTES, 10: BYTES, 12: BYTES };

function request(leaf: Shape): Shape {
  const scoped: Shape = {
    1: { kind: 'message', shape: SCOPE },
    2: { kind: 'message', shape: leaf, count: 'item' },
  };
  return {
    1: {
      kind: 'message',
      shape: { 1: { kind: 'message', shape: RESOURCE }, 2: { kind: 'message', shape: scoped } },
    },
  };
}

const SHAPES: Record<OtlpSignal, Shape> = { spans: request(SPAN), logs: request(LOG_RECORD) };

const WIRE_LENGTH = 2;

/** The end of the length-delimited field at the reader's position, checked against `end`. */
function sub(r: protobuf.Reader, end: number): number {
  const len = r.uint32();
  const to = r.pos + len;
  if (to > end) throw new RangeError('a field runs past its message');
  return to;
}

class Scan {
  constructor(
    private readonly r: protobuf.Reader,
    private readonly budget: Budget,
  ) {}

  message(shape: Shape, end: number): void {
    const { r, budget } = this;
    let attributes = 0;
    let events = 0;
    let links = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      const field = shape[tag >>> 3];
      if (field === undefined || (tag & 7) !== WIRE_LENGTH) {
        r.skipType(tag & 7);
        continue;
      }
      const to = sub(r, end);
      if (field.kind === 'bytes') budget.bytes(to - r.pos);
      else if (field.kind === 'attributes') {
        budget.value(++attributes, false);
        this.keyValue(to, 0);
      } else if (field.kind === 'value') this.anyValue(to, 0);
      else {
        if (field.count === 'item') budget.item();
        else if (field.count === 'events') budget.event(++events, 'events');
        else if (field.count === 'links') budget.event(++links, 'links');
        this.message(field.shape, to);
      }
      r.pos = to;
    }
  }

  private keyValue(end: number, depth: number): void {
    const { r } = this;
    while (r.pos < end) {
      const tag = r.uint32();
      if ((tag & 7) !== WIRE_LENGTH || (tag >>> 3 !== 1 && tag >>> 3 !== 2)) {
        r.skipType(tag & 7);
        continue;
      }
      const to = sub(r, end);
      if (tag >>> 3 === 1) this.budget.bytes(to - r.pos);
      else this.anyValue(to, depth);
      r.pos = to;
    }
  }

  private anyValue(end: number, depth: number): void {
    const { r, budget } = this;
    while (r.pos < end) {
      const tag = r.uint32();
      const n = tag >>> 3;
      if ((tag & 7) !== WIRE_LENGTH) {
        r.skipType(tag & 7);
        continue;
      }
      const to = sub(r, end);
      if (n === 1 || n === 7) budget.bytes(to - r.pos);
      else if (n === 5 || n === 6) {
        budget.depth(depth + 1);
        this.list(to, depth + 1, n === 5);
      }
      r.pos = to;
    }
  }

  /** An arrayValue's values or a kvlistValue's pairs. */
  private list(end: number, depth: number, array: boolean): void {
    const { r, budget } = this;
    let n = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      if ((tag & 7) !== WIRE_LENGTH || tag >>> 3 !== 1) {
        r.skipType(tag & 7);
        continue;
      }
      const to = sub(r, end);
      budget.value(++n, array);
      if (array) this.anyValue(to, depth);
      else this.keyValue(to, depth);
      r.pos = to;
    }
  }
}

/**
 * Walks a protobuf export request's wire format (tags and lengths only, nothing decoded) and counts what
 * the limits bound; throws OtlpLimitError at the first one passed (the scan stops there), RangeError or
 * Error on bytes that are not protobuf. Linear in the body's size.
 */
export function scanProtobuf(bytes: Uint8Array, signal: OtlpSignal, limits: OtlpLimits): ScanCounts {
  const budget = new Budget(limits, signal);
  const r = protobuf.Reader.create(bytes);
  new Scan(r, budget).message(SHAPES[signal], bytes.length);
  return budget.counts;
}

type Json = Record<string, unknown>;

const listOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const objectOf = (v: unknown): Json | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : null;
const textSize = (v: unknown): number => (typeof v === 'string' ? v.length : 0);

/** The same bounds over a parsed OTLP/JSON request (what is not of the expected type is left to decoding). */
class JsonWalk {
  constructor(private readonly budget: Budget) {}

  attributes(list: unknown, depth: number): void {
    let n = 0;
    for (const kv of listOf(list)) {
      this.budget.value(++n, false);
      const o = objectOf(kv);
      if (!o) continue;
      this.budget.bytes(textSize(o.key));
      this.anyValue(o.value, depth);
    }
  }

  anyValue(v: unknown, depth: number): void {
    const o = objectOf(v);
    if (!o) return;
    this.budget.bytes(Math.max(textSize(o.stringValue), textSize(o.bytesValue)));
    const array = objectOf(o.arrayValue);
    const kvlist = objectOf(o.kvlistValue);
    if (array) {
      this.budget.depth(depth + 1);
      let n = 0;
      for (const x of listOf(array.values)) {
        this.budget.value(++n, true);
        this.anyValue(x, depth + 1);
      }
    }
    if (kvlist) {
      this.budget.depth(depth + 1);
      this.attributes(kvlist.values, depth + 1);
    }
  }

  span(s: Json): void {
    for (const k of ['traceId', 'spanId', 'parentSpanId', 'traceState', 'name'])
      this.budget.bytes(textSize(s[k]));
    this.attributes(s.attributes, 0);
    let events = 0;
    for (const e of listOf(s.events)) {
      this.budget.event(++events, 'events');
      this.budget.bytes(textSize(objectOf(e)?.name));
      this.attributes(objectOf(e)?.attributes, 0);
    }
    let links = 0;
    for (const l of listOf(s.links)) {
      this.budget.event(++links, 'links');
      this.attributes(objectOf(l)?.attributes, 0);
    }
    this.budget.bytes(textSize(objectOf(s.status)?.message));
  }

  logRecord(l: Json): void {
    for (const k of ['severityText', 'traceId', 'spanId', 'eventName']) this.budget.bytes(textSize(l[k]));
    this.anyValue(l.body, 0);
    this.attributes(l.attributes, 0);
  }
}

/** Walks a parsed OTLP/JSON export request as `scanProtobuf` walks protobuf; throws OtlpLimitError. */
export function scanJson(value: unknown, signal: OtlpSignal, limits: OtlpLimits): ScanCounts {
  const budget = new Budget(limits, signal);
  const walk = new JsonWalk(budget);
  const root = objectOf(value);
  const [top, scoped, leaves] =
    signal === 'spans'
      ? ['resourceSpans', 'scopeSpans', 'spans']
      : ['resourceLogs', 'scopeLogs', 'logRecords'];
  for (const r of listOf(root?.[top])) {
    walk.attributes(objectOf(objectOf(r)?.resource)?.attributes, 0);
    for (const s of listOf(objectOf(r)?.[scoped])) {
      const scope = objectOf(objectOf(s)?.scope);
      if (scope) {
        budget.bytes(Math.max(textSize(scope.name), textSize(scope.version)));
        walk.attributes(scope.attributes, 0);
      }
      for (const leaf of listOf(objectOf(s)?.[leaves])) {
        budget.item();
        const o = objectOf(leaf);
        if (!o) continue;
        if (signal === 'spans') walk.span(o);
        else walk.logRecord(o);
      }
    }
  }
  return budget.counts;
}
