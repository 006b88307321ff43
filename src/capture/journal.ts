import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { readSpoolFile, type Segment, SpoolFiles, type SpoolLine } from './spool.js';
import type { TaskLogRecord } from './types.js';

/** The journal is flushed to disk this often, and its file rotated at most this often (or past MAX_BYTES). */
export const SYNC_MS = 100;
const ROTATE_MS = 1_000;
const MAX_BYTES = 64 * 1024 ** 2;

export interface JournalOptions {
  dataDir: string;
  warn?: (message: string) => void;
}

/** The latest line of each record in the spool files of stopped processes, less those already stored. */
async function unstoredRecords(db: Kysely<Database>, claimed: string[]): Promise<Map<string, TaskLogRecord>> {
  const latest = new Map<string, TaskLogRecord>();
  for (const file of claimed) {
    for (const line of readSpoolFile(file)) {
      if (line.k === 'f' || !latest.has(line.r.id)) latest.set(line.r.id, line.r);
    }
  }
  const ids = [...latest.keys()];
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const rows = await db.selectFrom('task_logs').select('id').where('id', 'in', chunk).execute();
    for (const r of rows) latest.delete(r.id);
  }
  return latest;
}

/** A file may go once nothing in it waits: no record kept past the store's bound, no open stream, all settled. */
const deletable = (segment: Segment, settled: number) =>
  segment.overflow.size === 0 && segment.open.size === 0 && settled >= segment.lastAccepted;

/**
 * The capture processor's journal (a write-ahead log over `spool.ts`'s files): every record is appended
 * (one `write` call, so that it survives a kill of the process) before the store is handed it; the file
 * is flushed to disk every SYNC_MS, rotated, and deleted once every record in it is settled by the
 * store; what processes gone before left is replayed at the next start.
 */
export class TaskLogJournal {
  readonly files: SpoolFiles;
  private current: Segment;
  private openedAt = Date.now();
  private readonly rotated: Segment[] = [];
  private readonly begun = new Map<string, Segment>();
  /** Set when the journal cannot be written (disk full): the processor goes on without it, told once. */
  private broken = false;
  private closed = false;
  private readonly timer: NodeJS.Timeout;

  /** `tick`: the processor's own step, run after each flush to disk (its refill and tidy). */
  constructor(
    private readonly options: JournalOptions,
    tick: () => void,
  ) {
    this.files = new SpoolFiles(options.dataDir);
    this.current = this.files.open();
    this.timer = setInterval(() => {
      this.files.sync(this.current);
      if (this.current.bytes > 0 && Date.now() - this.openedAt >= ROTATE_MS) this.rotate();
      tick();
    }, SYNC_MS);
    this.timer.unref();
  }

  get dir(): string {
    return this.files.dir;
  }

  /** Appends the line; returns the file it went to and the record's JSON text (null: closed or broken). */
  append(line: SpoolLine): { segment: Segment; json: string } | null {
    if (this.broken || this.closed) return null;
    const segment = this.current;
    try {
      const json = this.files.append(segment, line);
      if (segment.bytes >= MAX_BYTES) this.rotate();
      return { segment, json };
    } catch (err) {
      this.broken = true;
      this.options.warn?.(
        `The task log spool in ${this.files.dir} cannot be written (${(err as Error).message}): task logs are no longer kept through a kill`,
      );
      return null;
    }
  }

  /** A streamed call has started: its record is kept (as interrupted) until its final record comes. */
  begin(record: TaskLogRecord): void {
    const at = this.append({ k: 'b', r: record });
    if (!at) return;
    at.segment.open.add(record.id);
    this.begun.set(record.id, at.segment);
  }

  /** The call's final record has come: its start no longer holds the file it is in. */
  finish(id: string): void {
    const at = this.begun.get(id);
    if (!at) return;
    at.open.delete(id);
    this.begun.delete(id);
  }

  private rotate(): void {
    const old = this.current;
    this.files.close(old);
    this.rotated.push(old);
    this.current = this.files.open();
    this.openedAt = Date.now();
  }

  /** Deletes the rotated files whose records are all settled (`settled`: the store's count, in order). */
  tidy(settled: number): void {
    const { rotated } = this;
    for (let i = rotated.length - 1; i >= 0; i--) {
      const segment = rotated[i]!;
      if (!deletable(segment, settled)) continue;
      this.files.remove(segment);
      rotated.splice(i, 1);
    }
  }

  /**
   * The records that processes gone before journaled and did not store, each handed to `take` (which
   * journals it again here) before their files are removed: a kill during the replay loses nothing.
   */
  async replay(db: Kysely<Database>, take: (record: TaskLogRecord) => void): Promise<number> {
    const { files } = this;
    const claimed = files.claimOrphans();
    if (claimed.length === 0) return 0;
    let latest: Map<string, TaskLogRecord>;
    try {
      latest = await unstoredRecords(db, claimed);
    } catch (err) {
      this.options.warn?.(
        `Task logs spooled by a stopped process are not replayed yet: ${(err as Error).message}`,
      );
      return 0;
    }
    for (const record of latest.values()) take(record);
    for (const file of claimed) files.removeFile(file);
    if (latest.size > 0)
      this.options.warn?.(
        `Task logs spooled by a stopped process: ${latest.size} not yet stored, now written`,
      );
    return latest.size;
  }

  /** Stops the timer; nothing is appended any more. */
  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * Closes the journal once the store has closed: its files are deleted where everything is settled;
   * all are kept when the store gave records up at its close (`lostAtClose`: the database still away).
   */
  close(settled: number, lostAtClose: boolean): void {
    this.stop();
    this.closed = true;
    const { files, rotated } = this;
    rotated.push(this.current);
    files.close(this.current);
    let kept = 0;
    for (const segment of rotated) {
      if (!lostAtClose && deletable(segment, settled)) files.remove(segment);
      else kept++;
    }
    rotated.length = 0;
    files.release();
    if (kept > 0)
      this.options.warn?.(
        `Task logs not yet stored are kept in ${files.dir} (${kept} file(s)); the next start writes them`,
      );
  }
}
