import type { SandboxLimits } from './sandbox.js';

/**
 * The sandbox runner's HTTP protocol (`evalgate sandbox-runner`), shared by the runner and its clients.
 * Every route but GET /healthz needs `authorization: Bearer <EVALGATE_SANDBOX_TOKEN>`.
 *
 *   GET    /v1/status                    {available, reason?}
 *   POST   /v1/check                     {source, requirements}        → {problems} | {failed, detail}
 *   POST   /v1/scorers                   {evaluator, limits}           → 201 {id} | 422 {error}
 *   POST   /v1/scorers/:id/batches       {inputs: ScoreInput[]}        → {outcomes: ScoreOutcome[]}
 *   DELETE /v1/scorers/:id                                             → 204
 */

/** The limits a client asks for; the runner applies each one, capped by its own setting. */
export interface WireLimits {
  memory_mb: number;
  cpu_seconds: number;
  processes: number;
  file_size_mb: number;
  tmp_mb: number;
  timeout_ms: number;
}

export interface WireEvaluator {
  id: string;
  source: string;
  requirements: string[] | null;
}

/** Largest request body the runner reads; a client splits bigger batches. */
export const RUNNER_BODY_LIMIT = 128 * 1024 * 1024;

export function wireLimits(limits: SandboxLimits, timeoutMs: number): WireLimits {
  return {
    memory_mb: limits.memoryMb,
    cpu_seconds: limits.cpuSeconds,
    processes: limits.processes,
    file_size_mb: limits.fileSizeMb,
    tmp_mb: limits.tmpMb,
    timeout_ms: timeoutMs,
  };
}

/** The runner's own limits, each lowered to what the client asked for. */
export function cappedLimits(
  own: SandboxLimits,
  ownTimeoutMs: number,
  asked: WireLimits,
): { limits: SandboxLimits; timeoutMs: number } {
  return {
    limits: {
      memoryMb: Math.min(own.memoryMb, asked.memory_mb),
      cpuSeconds: Math.min(own.cpuSeconds, asked.cpu_seconds),
      processes: Math.min(own.processes, asked.processes),
      fileSizeMb: Math.min(own.fileSizeMb, asked.file_size_mb),
      tmpMb: Math.min(own.tmpMb, asked.tmp_mb),
    },
    timeoutMs: Math.min(ownTimeoutMs, asked.timeout_ms),
  };
}

const positive = { type: 'integer', minimum: 1 } as const;

/** JSON schemas of the request bodies (validated by Fastify before a handler runs). */
export const WIRE_SCHEMAS = {
  check: {
    type: 'object',
    required: ['source'],
    properties: {
      source: { type: ['string', 'null'], maxLength: 1_048_576 },
      requirements: { type: ['array', 'null'], maxItems: 200, items: { type: 'string', maxLength: 1000 } },
    },
  },
  scorer: {
    type: 'object',
    required: ['evaluator', 'limits'],
    properties: {
      evaluator: {
        type: 'object',
        required: ['id', 'source', 'requirements'],
        properties: {
          id: { type: 'string', maxLength: 200 },
          source: { type: 'string', maxLength: 1_048_576 },
          requirements: {
            type: ['array', 'null'],
            maxItems: 200,
            items: { type: 'string', maxLength: 1000 },
          },
        },
      },
      limits: {
        type: 'object',
        required: ['memory_mb', 'cpu_seconds', 'processes', 'file_size_mb', 'tmp_mb', 'timeout_ms'],
        properties: {
          memory_mb: positive,
          cpu_seconds: positive,
          processes: positive,
          file_size_mb: positive,
          tmp_mb: positive,
          timeout_ms: positive,
        },
      },
    },
  },
  batch: {
    type: 'object',
    required: ['inputs'],
    properties: {
      inputs: {
        type: 'array',
        items: {
          type: 'object',
          required: ['position', 'sample', 'groundTruth', 'baseline'],
          properties: {
            position: { type: 'integer' },
            sample: { type: ['object', 'null'] },
            groundTruth: { type: ['object', 'null'] },
            baseline: { type: ['object', 'null'] },
          },
        },
      },
    },
  },
} as const;
