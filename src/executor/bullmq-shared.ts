/** Cancellations, for every process of the deployment (under EVALGATE_REDIS_PREFIX). */
export function channel(prefix: string): string {
  return `${prefix}:runs`;
}

/** A run's jobs go to the queue of its environment: `runs-<environment>`. */
export function queueName(environment: string): string {
  return `runs-${environment}`;
}

export type RunMessage = { type: 'cancel'; runId: string };

/** The job that prepares a run (one per run: adding it again is a no-op while it exists). */
export const prepareJobId = (runId: string) => `prepare-${runId}`;
/** The parent job of a run's chunk jobs: it exists while the run's flow does. */
export const finalizeJobId = (runId: string) => `finalize-${runId}`;
/** A chunk job's id: one job per chunk, so submitting the same chunk again is a no-op. */
export const chunkJobId = (runId: string, launch: number, chunk: number) =>
  `chunk-${runId}-${launch}-${chunk}`;

/**
 * A chunk job's options: retried with back-off (its positions already stored are skipped); after the last
 * attempt it is left out of its run (which then ends in error).
 */
export const CHUNK_JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: true,
  removeOnFail: 1000,
} as const;

export const PREPARE_OPTIONS = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: 1000,
  removeOnFail: 1000,
} as const;
