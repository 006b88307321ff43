/** A run's lifecycle: `queued` → `running` → `completed` | `error` | `cancelled`. */
export const RUN_STATUSES = ['queued', 'running', 'completed', 'error', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const TERMINAL: readonly RunStatus[] = ['completed', 'error', 'cancelled'];
/** The statuses a run is still executed in. */
export const LIVE: readonly RunStatus[] = ['queued', 'running'];

/** Whether a run in this status has ended (completed, error or cancelled). */
export const isTerminal = (status: string): boolean => (TERMINAL as readonly string[]).includes(status);
