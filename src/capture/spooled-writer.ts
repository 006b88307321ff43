import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { readSpoolFile, type Segment, SpoolFiles, type SpoolLine } from './spool.js';
import type { LogWriter, LogWriterStats, TaskLogRecord } from './types.js';

/** The spool is flushed to disk this often, and its file rotated at most this often (or past MAX_BYTES). */
const SYNC_MS = 100;
const ROTATE_MS = 1_000;
const MAX_BYTES = 64 * 1024 ** 2;
/** A record past the bound is handed to the writer again at most this many times, then counted as lost. */
const REFILL_TRIES = 5;

export interface SpooledLogWriter extends LogWriter {
  /**
   * Stores the task logs that processes gone before (killed, or stopped while the database was away) had
   * spooled and not stored; returns how many it handed to the writer. Call before serving.
   */
  replay(db: Kysely<Database>): Promise<number>;
  /** Where the spool files are. */
  readonly dir: string;
}

export interface SpoolOptions {
  dataDir: string;
  /** The writer's bound: records past it stay in the spool, handed over again once it is half empty. */
  maxBuffered: number;
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

/** The ids past the bound, by the spool file that holds them. */
function bySegment(overflow: Map<string, Segment>): Map<Segment, Set<string>> {
  const grouped = new Map<Segment, Set<string>>();
  for (const [id, segment] of overflow) {
    const ids = grouped.get(segment) ?? new Set<string>();
    ids.add(id);
    grouped.set(segment, ids);
  }
  return grouped;
}

const deletable = (segment: Segment, finished: number) =>
  segment.overflow.size === 0 && segment.open.size === 0 && finished >= segment.lastAccepted;

/** The spooled writer's state and steps; `createSpooledLogWriter` hands out its methods bound. */
class SpooledWriter {
  readonly files: SpoolFiles;
  private current: Segment;
  private openedAt = Date.now();
  private readonly rotated: Segment[] = [];
  /** Records handed over that the writer accepted (its own `accepted`), and those it dropped at its bound. */
  private innerAccepted = 0;
  private drops = 0;
  accepted = 0;
  private givenUp = 0;
  private readonly begun = new Map<string, Segment>();
  readonly overflow = new Map<string, Segment>();
  private readonly tries = new Map<string, number>();
  /** Set when the spool cannot be written (disk full): the writer goes on without it, told once. */
  private broken = false;
  private closed = false;
  private closing = false;
  /** The record's JSON text as the last `spool` wrote it (null when it wrote nothing). */
  private spooledJson: string | null = null;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly inner: LogWriter,
    private readonly options: SpoolOptions,
  ) {
    this.files = new SpoolFiles(options.dataDir);
    this.current = this.files.open();
    this.timer = setInterval(() => {
      this.files.sync(this.current);
      if (this.current.bytes > 0 && Date.now() - this.openedAt >= ROTATE_MS) this.rotate();
      this.refill();
      this.tidy();
    }, SYNC_MS);
    this.timer.unref();
  }

  /** Appends the line; returns the file it went to (null: the spool is off or broken). */
  spool(line: SpoolLine): Segment | null {
    this.spooledJson = null;
    if (this.broken || this.closed) return null;
    const segment = this.current;
    try {
      this.spooledJson = this.files.append(segment, line);
      if (segment.bytes >= MAX_BYTES) this.rotate();
      return segment;
    } catch (err) {
      this.broken = true;
      this.options.warn?.(
        `The task log spool in ${this.files.dir} cannot be written (${(err as Error).message}): task logs are no longer kept through a kill`,
      );
      return null;
    }
  }

  private rotate(): void {
    const old = this.current;
    this.files.close(old);
    this.rotated.push(old);
    this.current = this.files.open();
    this.openedAt = Date.now();
  }

  /** Records accepted by the writer and since written or counted as failed (it takes them in order). */
  private done(): number {
    const s = this.inner.stats();
    return s.written + s.failed - this.drops;
  }

  /** `json`: the record's JSON text, already made by the spool (handed over as it is). */
  private hand(record: TaskLogRecord, segment: Segment | null, json: string | null = null): void {
    const { inner } = this;
    if (json !== null && inner.writeJson) inner.writeJson(record, json);
    else inner.write(record);
    const now = inner.stats().accepted;
    if (now > this.innerAccepted) {
      this.innerAccepted = now;
      if (segment) segment.lastAccepted = this.innerAccepted;
      return;
    }
    this.drops++;
    if (!segment || this.closed) {
      this.givenUp++;
      return;
    }
    segment.overflow.add(record.id);
    this.overflow.set(record.id, segment);
  }

  write(record: TaskLogRecord): void {
    const at = this.begun.get(record.id);
    if (at) {
      at.open.delete(record.id);
      this.begun.delete(record.id);
    }
    const segment = this.spool({ k: 'f', r: record });
    this.hand(record, segment, this.spooledJson);
  }

  begin(record: TaskLogRecord): void {
    const segment = this.spool({ k: 'b', r: record });
    if (!segment) return;
    segment.open.add(record.id);
    this.begun.set(record.id, segment);
  }

  private roomy(): boolean {
    return this.inner.stats().buffered < this.options.maxBuffered / 2;
  }

  /** Records past the bound, handed over again while the writer has room. */
  refill(): void {
    if (this.overflow.size === 0 || !this.roomy()) return;
    for (const [segment, ids] of bySegment(this.overflow)) {
      if (!this.refillFrom(segment, ids)) return;
    }
  }

  /** Hands over the records of `ids` kept in `segment`; false once the writer has no more room. */
  private refillFrom(segment: Segment, ids: Set<string>): boolean {
    const { overflow, tries } = this;
    for (const line of readSpoolFile(segment.file)) {
      if (line.k !== 'f' || !ids.has(line.r.id) || overflow.get(line.r.id) !== segment) continue;
      const id = line.r.id;
      segment.overflow.delete(id);
      overflow.delete(id);
      const n = (tries.get(id) ?? 0) + 1;
      if (n > REFILL_TRIES) {
        tries.delete(id);
        this.givenUp++;
        continue;
      }
      tries.set(id, n);
      this.write(line.r);
      if (!overflow.has(id)) tries.delete(id);
      if (!this.roomy()) return false;
    }
    // Ids not found in their file (it could not be read): lost.
    for (const id of ids) {
      if (overflow.get(id) !== segment) continue;
      segment.overflow.delete(id);
      overflow.delete(id);
      this.givenUp++;
    }
    return true;
  }

  private tidy(): void {
    const finished = this.done();
    const { rotated } = this;
    for (let i = rotated.length - 1; i >= 0; i--) {
      const segment = rotated[i]!;
      if (!deletable(segment, finished)) continue;
      this.files.remove(segment);
      rotated.splice(i, 1);
    }
  }

  stats(): LogWriterStats {
    const s = this.inner.stats();
    const { overflow } = this;
    return {
      accepted: this.accepted,
      written: s.written,
      failed: s.failed - this.drops + this.givenUp,
      buffered: s.buffered + overflow.size,
      spilled: overflow.size,
    };
  }

  async replay(db: Kysely<Database>): Promise<number> {
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
    // Spooled again here before the files are removed: a kill during the replay loses nothing.
    for (const record of latest.values()) {
      this.accepted++;
      this.write(record);
    }
    for (const file of claimed) files.removeFile(file);
    if (latest.size > 0)
      this.options.warn?.(
        `Task logs spooled by a stopped process: ${latest.size} not yet stored, now written`,
      );
    return latest.size;
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.timer);
    this.refill();
    const { inner, files, rotated } = this;
    const before = inner.stats().failed;
    await inner.close();
    // What the writer gave up at close (the database still away) is not stored: its files are kept.
    const lostAtClose = inner.stats().failed > before;
    this.closed = true;
    rotated.push(this.current);
    files.close(this.current);
    const finished = this.done();
    let kept = 0;
    for (const segment of rotated) {
      if (!lostAtClose && deletable(segment, finished)) files.remove(segment);
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

/**
 * A log writer behind a write-ahead spool (`spool.ts`): every record is appended to a local file before it
 * is handed to `inner`, so that a task log whose id went to a client exists even after a kill of the
 * process (the next start replays it). Records the writer drops at its bound (a long database outage)
 * stay in the spool and are handed over again once it has room, instead of being lost; only records the
 * database refuses, or that cannot be handed over after several tries, count as failed.
 */
export function createSpooledLogWriter(inner: LogWriter, options: SpoolOptions): SpooledLogWriter {
  const spooled = new SpooledWriter(inner, options);
  return {
    dir: spooled.files.dir,
    write(record) {
      spooled.accepted++;
      spooled.write(record);
    },
    begin: (record) => spooled.begin(record),
    flush: () => inner.flush(),
    // A record past the inner writer's bound waits in the overflow, out of its order.
    holds: (id) => spooled.overflow.has(id) || (inner.holds?.(id) ?? true),
    stats: () => spooled.stats(),
    replay: (db) => spooled.replay(db),
    close: () => spooled.close(),
  };
}
