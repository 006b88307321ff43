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
  /** Export body bytes in flight across requests (received, decoding, being stored); past them, 429. */
  maxInflightBytes: number;
}

/** Export requests of the largest size (the body limit) that fit in flight at once by default. */
const INFLIGHT_BODIES = 3;

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
      INFLIGHT_BODIES * bodyLimit,
      1024,
      2 ** 40,
    ),
  };
}
