import { availableParallelism } from 'node:os';
import { type Env, int } from './config-sections.js';

/** What one OTLP export request may hold, and how long it may wait for the trace store (docs/traces.md, Limits). */
export interface OtlpIngestSettings {
  limits: {
    maxItems: number;
    maxAttributes: number;
    maxEvents: number;
    maxDepth: number;
    maxValueBytes: number;
    maxValues: number;
  };
  writeWaitMs: number;
  /**
   * Export body bytes in flight across requests (received, decoding, being stored); past them, 429. By
   * default one body limit per decode thread: what the threads can work on at once (more would only wait
   * in their queue, and be answered later than an exporter's timeout allows).
   */
  maxInflightBytes: number;
}

/** OTLP decode threads: one per core but one (left to the event loop), at least one, at most four. */
export const OTLP_DECODE_THREADS = Math.max(1, Math.min(4, availableParallelism() - 1));

export function otlpIngestSettings(env: Env, bodyLimit: number): OtlpIngestSettings {
  return {
    limits: {
      maxItems: int('EVALGATE_OTLP_MAX_SPANS', env.EVALGATE_OTLP_MAX_SPANS, 100_000, 1, 10_000_000),
      maxAttributes: int('EVALGATE_OTLP_MAX_ATTRIBUTES', env.EVALGATE_OTLP_MAX_ATTRIBUTES, 128, 1, 1_000_000),
      maxEvents: int('EVALGATE_OTLP_MAX_EVENTS', env.EVALGATE_OTLP_MAX_EVENTS, 128, 1, 1_000_000),
      maxDepth: int('EVALGATE_OTLP_MAX_DEPTH', env.EVALGATE_OTLP_MAX_DEPTH, 16, 1, 64),
      maxValueBytes: int(
        'EVALGATE_OTLP_MAX_VALUE_BYTES',
        env.EVALGATE_OTLP_MAX_VALUE_BYTES,
        1024 * 1024,
        64,
        1024 ** 3,
      ),
      maxValues: int('EVALGATE_OTLP_MAX_VALUES', env.EVALGATE_OTLP_MAX_VALUES, 500_000, 1, 100_000_000),
    },
    writeWaitMs: int('EVALGATE_OTLP_WRITE_WAIT_MS', env.EVALGATE_OTLP_WRITE_WAIT_MS, 5_000, 0, 600_000),
    maxInflightBytes: int(
      'EVALGATE_OTLP_MAX_INFLIGHT_BYTES',
      env.EVALGATE_OTLP_MAX_INFLIGHT_BYTES,
      OTLP_DECODE_THREADS * bodyLimit,
      1024,
      2 ** 40,
    ),
  };
}
