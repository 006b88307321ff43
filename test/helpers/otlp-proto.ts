import path from 'node:path';
import protobuf from 'protobufjs';

/**
 * The official opentelemetry-proto definitions the server decodes with (data/otlp-proto), loaded by
 * protobufjs for tests that encode export requests and decode the answers: the trace and logs services'
 * requests and responses, and OTLP's error body (google.rpc.Status).
 */
export interface OtlpTypes {
  traceRequest: protobuf.Type;
  traceResponse: protobuf.Type;
  logsRequest: protobuf.Type;
  logsResponse: protobuf.Type;
  status: protobuf.Type;
}

let loaded: OtlpTypes | null = null;

export function otlpTypes(): OtlpTypes {
  if (loaded) return loaded;
  const root = new protobuf.Root();
  const dir = path.resolve('data/otlp-proto');
  root.resolvePath = (_origin, target) =>
    target.startsWith('google/protobuf/') ? target : path.join(dir, target);
  root.loadSync([
    'opentelemetry/proto/collector/trace/v1/trace_service.proto',
    'opentelemetry/proto/collector/logs/v1/logs_service.proto',
    'google/rpc/status.proto',
  ]);
  loaded = {
    traceRequest: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    traceResponse: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
    logsRequest: root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest'),
    logsResponse: root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse'),
    status: root.lookupType('google.rpc.Status'),
  };
  return loaded;
}
