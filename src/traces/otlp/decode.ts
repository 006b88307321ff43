import { parseJsonBody } from '../../http/json-parser.js';
import { OtlpBodyError } from './body.js';
import { prescanJsonText } from './json-prescan.js';
import { OtlpLimitError, type OtlpLimits, type OtlpSignal, scanJson, scanProtobuf } from './limits.js';
import { decodeLogsProtobuf, logsFromJson, type OtlpLogsRequest } from './logs-proto.js';
import { decodeProtobuf, fromJson, type OtlpTraceRequest } from './proto.js';

/** How an OTLP request and its answer are encoded (the request's content type says). */
export type Encoding = 'protobuf' | 'json';

/** The decoded request of each signal. */
export interface OtlpRequests {
  spans: OtlpTraceRequest;
  logs: OtlpLogsRequest;
}

const MESSAGE: Record<OtlpSignal, string> = {
  spans: 'ExportTraceServiceRequest',
  logs: 'ExportLogsServiceRequest',
};

/** Why decoding failed, as the answer states it: 413 for a limit passed, 400 for anything malformed. */
export function decodeFailure(err: unknown, signal: OtlpSignal, as: Encoding): OtlpBodyError {
  if (err instanceof OtlpBodyError) return err;
  if (err instanceof OtlpLimitError) return new OtlpBodyError(413, err.message);
  const why = err instanceof Error ? err.message : 'malformed';
  const format = as === 'json' ? 'OTLP/JSON' : 'OTLP protobuf';
  return new OtlpBodyError(400, `The body is not a valid ${format} ${MESSAGE[signal]}: ${why}`);
}

/**
 * An export request's body decoded, after its walk within `limits` (the wire format's for protobuf, the
 * parsed document's for JSON): no request past a limit is decoded. Throws OtlpBodyError (400, 413).
 */
export function decodeExport<S extends OtlpSignal>(
  signal: S,
  as: Encoding,
  bytes: Uint8Array,
  limits: OtlpLimits,
): OtlpRequests[S] {
  try {
    if (as === 'protobuf') {
      scanProtobuf(bytes, signal, limits);
      return (signal === 'spans' ? decodeProtobuf(bytes) : decodeLogsProtobuf(bytes)) as OtlpRequests[S];
    }
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8');
    // Counted as text first: a list past its limit is refused without parsing it.
    prescanJsonText(text, signal, limits);
    const value = parseJsonBody(text);
    scanJson(value, signal, limits);
    return (signal === 'spans' ? fromJson(value) : logsFromJson(value)) as OtlpRequests[S];
  } catch (err) {
    throw decodeFailure(err, signal, as);
  }
}
