import { readSpoolText, type Segment, SpoolFiles } from './spool.js';

/** The span spool's folder in the data dir, beside the task logs' (`task-log-spool`). */
export const SPAN_SPOOL_FOLDER = 'span-spool';

/** Flushed to disk (`fsync`) this often, rotated at most this often or past MAX_BYTES: as the task logs' spool. */
const SYNC_MS = 100;
const ROTATE_MS = 1_000;
const MAX_BYTES = 64 * 1024 ** 2;

export interface SpanSpoolOptions {
  dataDir: string;
  warn?: (message: string) => void;
}

/**
 * The span spool: the spans a process has taken from OTLP exports, appended (one `write` per part of a
 * request, so that they survive a kill of the process) before the export is answered; the same files,
 * rotation and flush to disk as the task logs' spool (`spool.ts`), in a folder of their own. The capture
 * processor's span lane takes and stores spans in order: a file is deleted once the lane has stored (or
 * given up) every span of it. A process started later replays the files of processes that are gone
 * (`span-replay.ts`).
 *
 * The lines are made and read by the lane's codec (`record` takes them as text): the spool only keeps
 * them.
 */
export class SpanSpool {
  private readonly files: SpoolFiles;
  /** Opened at the first span: a process that takes none makes no file. */
  private current: Segment | null = null;
  private openedAt = 0;
  private readonly rotated: Segment[] = [];
  /** The lane's count of spans taken and since stored or given up. */
  private done = 0;
  /** The last append failed (told once; each new part tries again). */
  private failing = false;
  private closed = false;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly options: SpanSpoolOptions) {
    this.files = new SpoolFiles(options.dataDir, SPAN_SPOOL_FOLDER);
    this.timer = setInterval(() => this.tick(), SYNC_MS);
    this.timer.unref();
  }

  get dir(): string {
    return this.files.dir;
  }

  private tick(): void {
    const { current } = this;
    if (current) {
      this.files.sync(current);
      if (current.bytes > 0 && Date.now() - this.openedAt >= ROTATE_MS) this.rotate();
    }
    this.tidy();
  }

  private rotate(): void {
    const old = this.current;
    if (!old) return;
    this.files.close(old);
    this.rotated.push(old);
    this.current = null;
  }

  /**
   * Appends `text` (whole lines) before the lane takes their spans; `taken`: the lane's count of spans
   * taken once these are. False when it cannot be written (the lane then refuses the spans).
   */
  record(text: string, taken: number): boolean {
    if (this.closed) return false;
    try {
      if (!this.current) {
        this.current = this.files.open();
        this.openedAt = Date.now();
      }
      const segment = this.current;
      this.files.appendText(segment, text);
      segment.lastAccepted = taken;
      if (segment.bytes >= MAX_BYTES) this.rotate();
      if (this.failing) this.options.warn?.(`The span spool in ${this.files.dir} is written again`);
      this.failing = false;
      return true;
    } catch (err) {
      // What was written of this part is kept with the file (the next part goes to a new one), never
      // deleted before its spans are stored: a span written whole is replayed even though refused now.
      this.rotate();
      if (!this.failing)
        this.options.warn?.(
          `The span spool in ${this.files.dir} cannot be written (${(err as Error).message}): OTLP exports are answered 503 until it can`,
        );
      this.failing = true;
      return false;
    }
  }

  /** The lane has stored (or given up) the first `done` spans it took. */
  settled(done: number): void {
    this.done = done;
  }

  /** Files whose spans are all stored are deleted (the current one once rotated). */
  private tidy(): void {
    const { rotated } = this;
    for (let i = rotated.length - 1; i >= 0; i--) {
      const segment = rotated[i]!;
      if (segment.lastAccepted > this.done) continue;
      this.files.remove(segment);
      rotated.splice(i, 1);
    }
  }

  /** The files of processes that are gone, claimed by this one (see `SpoolFiles.claimOrphans`). */
  claimOrphans(): string[] {
    return this.files.claimOrphans();
  }

  /** A claimed file's lines as written (a torn last line included: the reader skips what it cannot read). */
  read(file: string): string[] {
    return readSpoolText(file);
  }

  /** A claimed file whose spans were all taken again (and so spooled again here): deleted. */
  replayed(file: string): void {
    this.files.removeFile(file);
  }

  /** A claimed file whose spans could not all be taken: left for the next start. */
  giveBack(file: string): void {
    this.files.unclaim(file);
  }

  /**
   * Stops: the files whose spans are all stored are deleted; the others (spans the lane still held at
   * its close: the database away) are kept, handed over to whichever process looks next.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.rotate();
    this.tidy();
    for (const segment of this.rotated) this.files.handOver(segment.file);
    this.files.release();
    if (this.rotated.length > 0)
      this.options.warn?.(
        `Spans not yet stored are kept in ${this.files.dir} (${this.rotated.length} file(s)); the next start stores them`,
      );
  }
}
