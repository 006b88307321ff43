import type { CommittedLog } from './types.js';
import type { LogWriterOptions } from './writer.js';

/** What the log writer's thread is started with. */
export interface ThreadWorkerData {
  databaseUrl: string;
  options: Omit<LogWriterOptions, 'onProgress' | 'outage' | 'warn' | 'onCommitted'>;
  /** Whether the owner listens to committed batches (`committed` replies). */
  reportCommitted: boolean;
}

/** Messages to the log writer's thread. */
export type ThreadRequest =
  /** `json`: the JSON text of a TaskLogRecord[] (made of each record's text, parsed once on the thread). */
  { type: 'records'; json: string } | { type: 'flush'; id: number } | { type: 'close' };

/**
 * Messages from the log writer's thread; `started` gives its Linux thread id, `progress` its totals so
 * far, `availability` when the database stops (or resumes) taking batches, `warn` a line for the log,
 * `committed` what a committed batch stored (when the owner listens).
 */
export type ThreadReply =
  | { type: 'started'; tid: number | null }
  | { type: 'progress'; written: number; failed: number }
  | { type: 'availability'; available: boolean; reason: string }
  | { type: 'warn'; message: string }
  | { type: 'committed'; logs: CommittedLog[] }
  | { type: 'flushed'; id: number }
  | { type: 'closed' }
  | { type: 'fatal'; message: string };
