import path from 'node:path';
import protobuf from 'protobufjs';
import { hexIds, OTLP_PROTO_DIR, type OtlpAnyValue, type OtlpKeyValue, TO_OBJECT } from './proto.js';

/**
 * The OTLP logs messages (ExportLogsServiceRequest / Response), from the same official definitions as the
 * trace messages: protobuf bodies decoded by them, OTLP/JSON converted through them (hex ids as bytes).
 */

export interface OtlpLogRecord {
  /** fixed64 nanoseconds since the epoch, as a decimal string. */
  timeUnixNano?: string;
  observedTimeUnixNano?: string;
  severityNumber?: number;
  body?: OtlpAnyValue;
  attributes?: OtlpKeyValue[];
  traceId?: Uint8Array;
  spanId?: Uint8Array;
  /** The event's name (OTLP ≥ 1.5); older emitters put it in the `event.name` attribute. */
  eventName?: string;
}

export interface OtlpScopeLogs {
  scope?: { name?: string; version?: string };
  logRecords?: OtlpLogRecord[];
}

export interface OtlpResourceLogs {
  resource?: { attributes?: OtlpKeyValue[] };
  scopeLogs?: OtlpScopeLogs[];
}

export interface OtlpLogsRequest {
  resourceLogs?: OtlpResourceLogs[];
}

interface LogsCodec {
  request: protobuf.Type;
  response: protobuf.Type;
}

let codec: LogsCodec | null = null;

function load(): LogsCodec {
  if (codec) return codec;
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) =>
    target.startsWith('google/protobuf/') ? target : path.join(OTLP_PROTO_DIR, target);
  root.loadSync(['opentelemetry/proto/collector/logs/v1/logs_service.proto']);
  root.resolveAll();
  codec = {
    request: root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest'),
    response: root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse'),
  };
  return codec;
}

/** Decodes a protobuf ExportLogsServiceRequest; throws on bytes that are not one. */
export function decodeLogsProtobuf(bytes: Uint8Array): OtlpLogsRequest {
  const { request } = load();
  return request.toObject(request.decode(bytes), TO_OBJECT) as OtlpLogsRequest;
}

/** Converts a parsed OTLP/JSON ExportLogsServiceRequest; throws on a structure that is not one. */
export function logsFromJson(value: unknown): OtlpLogsRequest {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError('expected a JSON object (ExportLogsServiceRequest)');
  }
  const { request } = load();
  const message = request.fromObject(hexIds(value) as Record<string, unknown>);
  const problem = request.verify(message);
  if (problem) throw new TypeError(problem);
  return request.toObject(message, TO_OBJECT) as OtlpLogsRequest;
}

/** What the answer says of log records that were not accepted. */
export interface LogsPartialSuccess {
  rejectedLogRecords: number;
  errorMessage: string;
}

/** ExportLogsServiceResponse, in protobuf or in OTLP/JSON. */
export function encodeLogsResponse(
  partial: LogsPartialSuccess | null,
  as: 'protobuf' | 'json',
): Uint8Array | string {
  if (as === 'json') {
    return JSON.stringify(
      partial
        ? {
            partialSuccess: {
              rejectedLogRecords: String(partial.rejectedLogRecords),
              errorMessage: partial.errorMessage,
            },
          }
        : {},
    );
  }
  const { response } = load();
  const body = partial ? { partialSuccess: partial } : {};
  return response.encode(response.fromObject(body)).finish();
}
