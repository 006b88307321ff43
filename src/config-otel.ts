import { ConfigError, type Env, int, text } from './config-sections.js';

/**
 * Export of the gateway's own telemetry over OTLP/HTTP (protobuf), set by the standard OpenTelemetry
 * variables: on when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set.
 */
export interface OtelExportSettings {
  /** Where spans go: the traces endpoint as given, else the base endpoint + `/v1/traces`. */
  tracesUrl: string;
  /** Where score events (log records) go: the logs endpoint as given, else the base + `/v1/logs`. */
  logsUrl: string;
  tracesHeaders: Record<string, string>;
  logsHeaders: Record<string, string>;
  /** `service.name` of the resource (`OTEL_SERVICE_NAME`, default `evalgate`). */
  serviceName: string;
  /** `OTEL_RESOURCE_ATTRIBUTES`, the service name excluded. */
  resourceAttributes: Record<string, string>;
  /** Message content on spans (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`); off by default. */
  captureContent: boolean;
  /** One export request's limit (`OTEL_EXPORTER_OTLP_TIMEOUT`, ms). */
  timeoutMs: number;
  /** The batch processors' bounds (`OTEL_BSP_*`, also used for the score events' processor). */
  maxQueueSize: number;
  maxExportBatchSize: number;
  scheduledDelayMs: number;
}

/** `key1=value1,key2=value2` with URL-encoded values, as the OTLP exporter specification writes headers. */
export function parseKeyValues(name: string, raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  const value = text(raw);
  if (value === null) return out;
  for (const part of value.split(',')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    const key = eq > 0 ? part.slice(0, eq).trim() : '';
    if (key === '') throw new ConfigError(`${name}: expected key=value pairs separated by commas`);
    try {
      out[decodeURIComponent(key)] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      throw new ConfigError(`${name}: '${key}' has a badly encoded value`);
    }
  }
  return out;
}

function endpoint(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got '${raw}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`${name} must be an http(s) URL, got '${raw}'`);
  return url.toString();
}

/** The base endpoint with a signal's path appended, as the OTLP exporter specification says. */
function signalUrl(base: string, signal: 'traces' | 'logs'): string {
  return `${base.replace(/\/+$/, '')}/v1/${signal}`;
}

function protocolOf(env: Env): void {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'] as const) {
    const protocol = text(env[name]);
    if (protocol !== null && protocol !== 'http/protobuf')
      throw new ConfigError(`${name}: the gateway exports with http/protobuf only, got '${protocol}'`);
  }
}

/** The export settings, or null when no OTLP endpoint is configured (or the SDK is disabled). */
export function otelExportSettings(env: Env): OtelExportSettings | null {
  if (text(env.OTEL_SDK_DISABLED)?.toLowerCase() === 'true') return null;
  if (text(env.OTEL_TRACES_EXPORTER)?.toLowerCase() === 'none') return null;
  const base = text(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const traces = text(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (base === null && traces === null) return null;
  protocolOf(env);
  const tracesUrl = traces
    ? endpoint('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces)
    : signalUrl(endpoint('OTEL_EXPORTER_OTLP_ENDPOINT', base ?? ''), 'traces');
  const logs = text(env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT);
  // With a traces endpoint alone, score events go beside it (…/v1/traces → …/v1/logs).
  const logsUrl = logs
    ? endpoint('OTEL_EXPORTER_OTLP_LOGS_ENDPOINT', logs)
    : base
      ? signalUrl(endpoint('OTEL_EXPORTER_OTLP_ENDPOINT', base), 'logs')
      : tracesUrl.replace(/\/v1\/traces\/?$/, '/v1/logs');
  const shared = parseKeyValues('OTEL_EXPORTER_OTLP_HEADERS', env.OTEL_EXPORTER_OTLP_HEADERS);
  const resource = parseKeyValues('OTEL_RESOURCE_ATTRIBUTES', env.OTEL_RESOURCE_ATTRIBUTES);
  const serviceName = text(env.OTEL_SERVICE_NAME) ?? resource['service.name'] ?? 'evalgate';
  delete resource['service.name'];
  const maxQueueSize = int('OTEL_BSP_MAX_QUEUE_SIZE', env.OTEL_BSP_MAX_QUEUE_SIZE, 2048, 1, 1_000_000);
  return {
    tracesUrl,
    logsUrl,
    tracesHeaders: {
      ...shared,
      ...parseKeyValues('OTEL_EXPORTER_OTLP_TRACES_HEADERS', env.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
    },
    logsHeaders: {
      ...shared,
      ...parseKeyValues('OTEL_EXPORTER_OTLP_LOGS_HEADERS', env.OTEL_EXPORTER_OTLP_LOGS_HEADERS),
    },
    serviceName,
    resourceAttributes: resource,
    captureContent: text(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)?.toLowerCase() === 'true',
    timeoutMs: int('OTEL_EXPORTER_OTLP_TIMEOUT', env.OTEL_EXPORTER_OTLP_TIMEOUT, 10_000, 1, 600_000),
    maxQueueSize,
    maxExportBatchSize: Math.min(
      maxQueueSize,
      int('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, 512, 1, 1_000_000),
    ),
    scheduledDelayMs: int('OTEL_BSP_SCHEDULE_DELAY', env.OTEL_BSP_SCHEDULE_DELAY, 5000, 1, 3_600_000),
  };
}
