/**
 * Where runs go to be executed, defined by what it means: the API submits a run and may cancel it.
 * Two implementations, chosen by `EVALGATE_EXECUTOR`: `inline` (the run's chunks are claimed from the
 * database by executing processes, under leases) and `bullmq` (a flow of jobs on a queue per
 * environment). Workers in the same process learn of submissions and cancellations by subscribing.
 */
export interface RunQueue {
  /** Hands a queued run to the executors of its environment. */
  submit(run: { id: string; environment: string }): Promise<void>;
  /**
   * Hands one chunk, already stored as pending, of a running run to the executors of its environment
   * (a monitor's run grows by chunks as its monitor selects calls).
   */
  submitChunk(chunk: QueuedChunk, environment: string): Promise<void>;
  /** Stops a run's work everywhere within about a second; its cancellation flag is already stored. */
  cancel(runId: string): Promise<void>;
  /** Jobs waiting and active per environment, where the backend can tell (for metrics). */
  depth(): Promise<Record<string, { waiting: number; active: number; delayed?: number }>>;
  subscribe(listener: RunQueueListener): () => void;
  /**
   * Live runs (in the database) whose jobs the backend no longer holds, where it can lose them (BullMQ on
   * a Redis that restarted empty); they are submitted again by the executors' reconciler.
   */
  lostRuns?(): Promise<string[]>;
  close(): Promise<void>;
}

/** The run queue did not take a submission in time (Redis away): the run stays queued in the database. */
export class QueueUnavailable extends Error {
  override name = 'QueueUnavailable';
}

/** A chunk of positions [from, to) of one launch of a run. */
export interface QueuedChunk {
  runId: string;
  launch: number;
  chunk: number;
  from: number;
  to: number;
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
