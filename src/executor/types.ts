/** An executor: takes runs of some environments from the run queue and executes them in this process. */
export interface Executor {
  start(): Promise<void>;
  /** Stops taking work; work in flight is interrupted and left to resume elsewhere. */
  close(): Promise<void>;
}

export interface ExecutorOptions {
  /** Unique per process: `<host>:<pid>:<random>`. */
  workerId: string;
  host: string;
  environments: string[];
  /** Chunks executed at once in this process. */
  concurrency: number;
  /** How long a claimed chunk (or BullMQ job lock) stays ours without a heartbeat. */
  leaseMs: number;
  /** How often an idle inline executor looks for work. */
  pollMs: number;
  /** How often a BullMQ executor looks for live runs whose jobs are gone. */
  reconcileMs: number;
  warn(message: string): void;
}
