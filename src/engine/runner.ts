import { setMaxListeners } from 'node:events';
import { type ExecutionDeps, executeRun, SHUTDOWN } from './executor.js';

/**
 * Where runs execute. The embedded mode runs them in this process; a scale-out implementation (BullMQ
 * flows: chunk jobs under a finalize job) fits the same contract.
 */
export interface JobRunner {
  /** Schedules a queued run. */
  enqueue(runId: string): Promise<void>;
  /** Stops a run as soon as possible; it ends `cancelled` with its partial results. */
  cancel(runId: string): Promise<void>;
  /** Picks up runs left `queued` or `running` by a previous process. */
  start(resumable: () => Promise<string[]>): Promise<void>;
  /** Stops executing; unfinished runs stay resumable. */
  close(): Promise<void>;
}

export interface InlineRunnerOptions {
  /** Runs executing at once in this process. */
  maxConcurrentRuns: number;
  onError?: (runId: string, err: unknown) => void;
}

export function createInlineRunner(deps: ExecutionDeps, options: InlineRunnerOptions): JobRunner {
  const queue: string[] = [];
  const active = new Map<string, { controller: AbortController; done: Promise<void> }>();
  let closed = false;

  function pump(): void {
    while (!closed && active.size < options.maxConcurrentRuns && queue.length > 0) {
      const runId = queue.shift()!;
      if (active.has(runId)) continue;
      const controller = new AbortController();
      // Every call in flight of the run listens to this one signal.
      setMaxListeners(0, controller.signal);
      const done = executeRun(deps, runId, controller.signal)
        .catch((err: unknown) => options.onError?.(runId, err))
        .finally(() => {
          active.delete(runId);
          pump();
        });
      active.set(runId, { controller, done });
    }
  }

  return {
    async enqueue(runId) {
      if (!queue.includes(runId) && !active.has(runId)) queue.push(runId);
      pump();
    },
    async cancel(runId) {
      const i = queue.indexOf(runId);
      if (i >= 0) queue.splice(i, 1);
      active.get(runId)?.controller.abort(new Error('cancelled'));
    },
    async start(resumable) {
      for (const id of await resumable()) if (!queue.includes(id)) queue.push(id);
      pump();
    },
    async close() {
      closed = true;
      queue.length = 0;
      for (const { controller } of active.values()) controller.abort(SHUTDOWN);
      await Promise.all([...active.values()].map((a) => a.done));
    },
  };
}
