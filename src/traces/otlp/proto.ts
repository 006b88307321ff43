import path from 'node:path';
import protobuf from 'protobufjs';
import { packagePath } from '../../shared/package-root.js';

/**
 * The OTLP trace messages, from the official opentelemetry-proto definitions (data/otlp-proto, v1.9.0)
 * loaded by protobufjs: protobuf bodies are decoded by them, JSON bodies converted through them (proto3's
 * JSON mapping with OTLP's hex ids), so both end in the same message shape below.
 */

// src/traces/otlp and dist/traces/otlp both sit three levels below the package root.
const PROTO_DIR = packagePath('data', 'otlp-proto');

/** An OTLP AnyValue as decoded: exactly one field is set (none for an empty value). */
export interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  /** int64, as a decimal string. */
  intValue?: string;
  doubleValue?: number;
  arrayValue?: { values?: OtlpAnyValue[] };
  kvlistValue?: { values?: OtlpKeyValue[] };
  bytesValue?: Uint8Array;
}

export interface OtlpKeyValue {
  key?: string;
  value?: OtlpAnyValue;
}

export interface OtlpEvent {
  /** fixed64 nanoseconds since the epoch, as a decimal string. */
  timeUnixNano?: string;
  name?: string;
  attributes?: OtlpKeyValue[];
}

export interface OtlpSpan {
  traceId?: Uint8Array;
  spanId?: Uint8Array;
  parentSpanId?: Uint8Array;
  name?: string;
  kind?: number;
  startTimeUnixNano?: string;
  endTimeUnixNano?: string;
  attributes?: OtlpKeyValue[];
  events?: OtlpEvent[];
  status?: { message?: string; code?: number };
}

export interface OtlpScopeSpans {
  scope?: { name?: string; version?: string };
  spans?: OtlpSpan[];
}

export interface OtlpResourceSpans {
  resource?: { attributes?: OtlpKeyValue[] };
  scopeSpans?: OtlpScopeSpans[];
}

export interface OtlpTraceRequest {
  resourceSpans?: OtlpResourceSpans[];
}

interface Codec {
  request: protobuf.Type;
  response: protobuf.Type;
  status: protobuf.Type;
}

let codec: Codec | null = null;

function load(): Codec {
  if (codec) return codec;
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) =>
    target.startsWith('google/protobuf/') ? target : path.join(PROTO_DIR, target);
  root.loadSync(['opentelemetry/proto/collector/trace/v1/trace_service.proto', 'google/rpc/status.proto']);
  root.resolveAll();
  codec = {
    request: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    response: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
    status: root.lookupType('google.rpc.Status'),
  };
  return codec;
}

export const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: Number, defaults: false };

/** Decodes a protobuf ExportTraceServiceRequest; throws on bytes that are not one. */
export function decodeProtobuf(bytes: Uint8Array): OtlpTraceRequest {
  const { request } = load();
  return request.toObject(request.decode(bytes), TO_OBJECT) as OtlpTraceRequest;
}

const ID_FIELDS = new Set(['traceId', 'spanId', 'parentSpanId']);

/** The directory of the official definitions (shared with the logs messages). */
export const OTLP_PROTO_DIR = PROTO_DIR;
const HEX_ID = /^(?:[0-9a-fA-F]{2})*$/;

/** OTLP/JSON writes trace and span ids in hex where proto3's JSON mapping has base64: turned into bytes. */
export function hexIds(value: unknown, depth = 0): unknown {
  if (depth > 12 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    for (const item of value) hexIds(item, depth + 1);
    return value;
  }
  const o = value as Record<string, unknown>;
  for (const [k, v] of Object.entries(o)) {
    if (ID_FIELDS.has(k) && typeof v === 'string' && HEX_ID.test(v)) o[k] = Buffer.from(v, 'hex');
    else if (typeof v === 'object') hexIds(v, depth + 1);
  }
  return value;
}

/** Converts a parsed OTLP/JSON ExportTraceServiceRequest; throws on a structure that is not one. */
export function fromJson(value: unknown): OtlpTraceRequest {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError('expected a JSON object (ExportTraceServiceRequest)');
  }
  const { request } = load();
  const message = request.fromObject(hexIds(value) as Record<string, unknown>);
  const problem = request.verify(message);
  if (problem) throw new TypeError(problem);
  return request.toObject(message, TO_OBJECT) as OtlpTraceRequest;
}

/** What the answer says of spans that were not accepted. */
export interface PartialSuccess {
  rejectedSpans: number;
  errorMessage: string;
}

/** ExportTraceServiceResponse, in protobuf or in OTLP/JSON. */
export function encodeResponse(partial: PartialSuccess | null, as: 'protobuf' | 'json'): Uint8Array | string {
  const body = partial
    ? { partialSuccess: { rejectedSpans: partial.rejectedSpans, errorMessage: partial.errorMessage } }
    : {};
  if (as === 'json') {
    return JSON.stringify(
      partial
        ? {
            partialSuccess: {
              rejectedSpans: String(partial.rejectedSpans),
              errorMessage: partial.errorMessage,
            },
          }
        : {},
    );
  }
  const { response } = load();
  return response.encode(response.fromObject(body)).finish();
}

/** google.rpc.Code values the ingest answers with. */
export const RPC_CODES = { INVALID_ARGUMENT: 3, RESOURCE_EXHAUSTED: 8 } as const;

/** A google.rpc.Status error body (what OTLP/HTTP answers failures with), in protobuf or JSON. */
export function encodeStatus(code: number, message: string, as: 'protobuf' | 'json'): Uint8Array | string {
  if (as === 'json') return JSON.stringify({ code, message });
  const { status } = load();
  return status.encode(status.fromObject({ code, message })).finish();
}
