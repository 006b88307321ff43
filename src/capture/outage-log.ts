/** How a log writer reports a database outage: once as it starts, once as it ends. */
export interface OutageLog {
  down(reason: string): void;
  up(): void;
}

/**
 * One warning when the database stops taking task logs and one when it takes them again, with how many
 * records were dropped meanwhile (past `maxBuffered`): never one per failed batch or dropped record.
 * `dropped` reads the writer's running count of records dropped at its bound.
 */
export function createOutageLog(
  maxBuffered: number,
  dropped: () => number,
  warn: ((message: string) => void) | undefined,
): OutageLog {
  let since: number | null = null;
  let droppedBefore = 0;
  return {
    down(reason) {
      if (since !== null) return;
      since = Date.now();
      droppedBefore = dropped();
      warn?.(
        `Task logs cannot be written, the database is unavailable (${reason}): up to ${maxBuffered} records are held and retried until it returns; records past that are dropped`,
      );
    },
    up() {
      if (since === null) return;
      const seconds = ((Date.now() - since) / 1000).toFixed(1);
      const n = dropped() - droppedBefore;
      since = null;
      warn?.(
        n > 0
          ? `The database takes task logs again after ${seconds} s; ${n} records were dropped meanwhile (more than ${maxBuffered} held)`
          : `The database takes task logs again after ${seconds} s; no records were dropped`,
      );
    },
  };
}
