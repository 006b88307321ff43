import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter as HttpExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Harness } from '../helpers/harness.js';

// Active spans follow async calls (once per process; later calls keep the first).
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

/** An OpenTelemetry SDK tracer provider exporting to the harness's `/v1/traces`. */
export function sdkProvider(
  h: Harness,
  options: {
    protocol: 'protobuf' | 'json';
    key?: string;
    headers?: Record<string, string>;
    resource?: Record<string, string>;
    /** Spans held until `forceFlush` (a batch processor that never sends on its own), instead of one by one. */
    held?: boolean;
  },
) {
  const config = {
    url: `${h.url}/v1/traces`,
    headers: { authorization: `Bearer ${options.key ?? h.admin.key}`, ...options.headers },
  };
  const exporter = options.protocol === 'protobuf' ? new ProtoExporter(config) : new HttpExporter(config);
  return new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'test-app', ...options.resource }),
    spanProcessors: [
      options.held
        ? new BatchSpanProcessor({ exporter, scheduledDelayMillis: 3_600_000, maxExportBatchSize: 10_000 })
        : new SimpleSpanProcessor({ exporter }),
    ],
  });
}

/** The spans stored in the admin key's project. */
export async function storedSpanCount(h: Harness): Promise<number> {
  const row = await h.services.db
    .selectFrom('spans')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('project_id', '=', h.admin.projectId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Waits until what was exported is stored: spans and the task logs made of them. */
export async function settled(h: Harness): Promise<void> {
  await h.services.traces.flush();
  await h.services.logWriter.flush();
}

/** A container's task logs, oldest first. */
export async function logsOf(h: Harness, container: string, key?: string): Promise<any[]> {
  await settled(h);
  const res = await h.call('GET', `/v1/containers/${container}/logs?limit=100`, { key });
  if (res.status !== 200) throw new Error(`logs of ${container}: ${res.status} ${res.text}`);
  return res.body.data;
}
