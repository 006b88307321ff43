/**
 * Where runs go to be executed, defined by what it means: the API submits a run and may cancel it.
 * Two implementations, chosen by `EVALGATE_EXECUTOR`: `inline` (the run's chunks are claimed from the
 * database by executing processes, under leases) and `bullmq` (a flow of jobs on a queue per
 * environment). Workers in the same process learn of submissions and cancellations by subscribing.
 */
export interface RunQueue {
  /** Hands a queued run to the executors of its environment. */
  submit(run: { id: string; environment: string }): Promise<void>;
  /** Stops a run's work everywhere within about a second; its cancellation flag is already stored. */
  cancel(runId: string): Promise<void>;
  /** Jobs waiting and active per environment, where the backend can tell (for metrics). */
  depth(): Promise<Record<string, { waiting: number; active: number; delayed?: number }>>;
  subscribe(listener: RunQueueListener): () => void;
  close(): Promise<void>;
}

export interface RunQueueListener {
  submitted?(runId: string, environment: string): void;
  cancelled?(runId: string): void;
}

/** Subscribers of one process. */
export class Listeners {
  private readonly all = new Set<RunQueueListener>();

  add(listener: RunQueueListener): () => void {
    this.all.add(listener);
    return () => this.all.delete(listener);
  }

  submitted(runId: string, environment: string): void {
    for (const l of this.all) l.submitted?.(runId, environment);
  }

  cancelled(runId: string): void {
    for (const l of this.all) l.cancelled?.(runId);
  }
}
