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

/**
 * A log writer behind a write-ahead spool (`spool.ts`): every record is appended to a local file before it
 * is handed to `inner`, so that a task log whose id went to a client exists even after a kill of the
 * process (the next start replays it). Records the writer drops at its bound (a long database outage)
 * stay in the spool and are handed over again once it has room, instead of being lost; only records the
 * database refuses, or that cannot be handed over after several tries, count as failed.
 */
export function createSpooledLogWriter(inner: LogWriter, options: SpoolOptions): SpooledLogWriter {
  const files = new SpoolFiles(options.dataDir);
  const warn = options.warn;
  let current: Segment = files.open();
  let openedAt = Date.now();
  const rotated: Segment[] = [];
  /** Records handed over that the writer accepted (its own `accepted`), and those it dropped at its bound. */
  let innerAccepted = 0;
  let drops = 0;
  let accepted = 0;
  let givenUp = 0;
  const begun = new Map<string, Segment>();
  const overflow = new Map<string, Segment>();
  const tries = new Map<string, number>();
  /** Set when the spool cannot be written (disk full): the writer goes on without it, told once. */
  let broken = false;
  let closed = false;
  let closing = false;

  /** The record's JSON text as the last `spool` wrote it (null when it wrote nothing). */
  let spooledJson: string | null = null;

  /** Appends the line; returns the file it went to (null: the spool is off or broken). */
  function spool(line: SpoolLine): Segment | null {
    spooledJson = null;
    if (broken || closed) return null;
    const segment = current;
    try {
      spooledJson = files.append(segment, line);
      if (segment.bytes >= MAX_BYTES) rotate();
      return segment;
    } catch (err) {
      broken = true;
      warn?.(
        `The task log spool in ${files.dir} cannot be written (${(err as Error).message}): task logs are no longer kept through a kill`,
      );
      return null;
    }
  }

  function rotate(): void {
    const old = current;
    files.close(old);
    rotated.push(old);
    current = files.open();
    openedAt = Date.now();
  }

  /** Records accepted by the writer and since written or counted as failed (it takes them in order). */
  function done(): number {
    const s = inner.stats();
    return s.written + s.failed - drops;
  }

  /** `json`: the record's JSON text, already made by the spool (handed over as it is). */
  function hand(record: TaskLogRecord, segment: Segment | null, json: string | null = null): void {
    if (json !== null && inner.writeJson) inner.writeJson(record, json);
    else inner.write(record);
    const now = inner.stats().accepted;
    if (now > innerAccepted) {
      innerAccepted = now;
      if (segment) segment.lastAccepted = innerAccepted;
      return;
    }
    drops++;
    if (!segment || closed) {
      givenUp++;
      return;
    }
    segment.overflow.add(record.id);
    overflow.set(record.id, segment);
  }

  function write(record: TaskLogRecord): void {
    const at = begun.get(record.id);
    if (at) {
      at.open.delete(record.id);
      begun.delete(record.id);
    }
    const segment = spool({ k: 'f', r: record });
    hand(record, segment, spooledJson);
  }

  /** Records past the bound, handed over again while the writer has room. */
  function refill(): void {
    if (overflow.size === 0 || inner.stats().buffered >= options.maxBuffered / 2) return;
    const bySegment = new Map<Segment, Set<string>>();
    for (const [id, segment] of overflow) {
      const ids = bySegment.get(segment) ?? new Set<string>();
      ids.add(id);
      bySegment.set(segment, ids);
    }
    for (const [segment, ids] of bySegment) {
      for (const line of readSpoolFile(segment.file)) {
        if (line.k !== 'f' || !ids.has(line.r.id) || overflow.get(line.r.id) !== segment) continue;
        const id = line.r.id;
        segment.overflow.delete(id);
        overflow.delete(id);
        const n = (tries.get(id) ?? 0) + 1;
        if (n > REFILL_TRIES) {
          tries.delete(id);
          givenUp++;
          continue;
        }
        tries.set(id, n);
        write(line.r);
        if (!overflow.has(id)) tries.delete(id);
        if (inner.stats().buffered >= options.maxBuffered / 2) return;
      }
      // Ids not found in their file (it could not be read): lost.
      for (const id of ids) {
        if (overflow.get(id) !== segment) continue;
        segment.overflow.delete(id);
        overflow.delete(id);
        givenUp++;
      }
    }
  }

  const deletable = (segment: Segment, finished: number) =>
    segment.overflow.size === 0 && segment.open.size === 0 && finished >= segment.lastAccepted;

  function tidy(): void {
    const finished = done();
    for (let i = rotated.length - 1; i >= 0; i--) {
      const segment = rotated[i]!;
      if (!deletable(segment, finished)) continue;
      files.remove(segment);
      rotated.splice(i, 1);
    }
  }

  const timer = setInterval(() => {
    files.sync(current);
    if (current.bytes > 0 && Date.now() - openedAt >= ROTATE_MS) rotate();
    refill();
    tidy();
  }, SYNC_MS);
  timer.unref();

  return {
    dir: files.dir,
    write(record) {
      accepted++;
      write(record);
    },
    begin(record) {
      const segment = spool({ k: 'b', r: record });
      if (!segment) return;
      segment.open.add(record.id);
      begun.set(record.id, segment);
    },
    flush: () => inner.flush(),
    // A record past the inner writer's bound waits in the overflow, out of its order.
    holds: (id) => overflow.has(id) || (inner.holds?.(id) ?? true),
    stats(): LogWriterStats {
      const s = inner.stats();
      return {
        accepted,
        written: s.written,
        failed: s.failed - drops + givenUp,
        buffered: s.buffered + overflow.size,
        spilled: overflow.size,
      };
    },
    async replay(db) {
      const claimed = files.claimOrphans();
      if (claimed.length === 0) return 0;
      const latest = new Map<string, TaskLogRecord>();
      for (const file of claimed) {
        for (const line of readSpoolFile(file)) {
          if (line.k === 'f' || !latest.has(line.r.id)) latest.set(line.r.id, line.r);
        }
      }
      const ids = [...latest.keys()];
      try {
        for (let i = 0; i < ids.length; i += 500) {
          const chunk = ids.slice(i, i + 500);
          const rows = await db.selectFrom('task_logs').select('id').where('id', 'in', chunk).execute();
          for (const r of rows) latest.delete(r.id);
        }
      } catch (err) {
        warn?.(`Task logs spooled by a stopped process are not replayed yet: ${(err as Error).message}`);
        return 0;
      }
      // Spooled again here before the files are removed: a kill during the replay loses nothing.
      for (const record of latest.values()) {
        accepted++;
        write(record);
      }
      for (const file of claimed) files.removeFile(file);
      if (latest.size > 0)
        warn?.(`Task logs spooled by a stopped process: ${latest.size} not yet stored, now written`);
      return latest.size;
    },
    async close() {
      if (closing) return;
      closing = true;
      clearInterval(timer);
      refill();
      const before = inner.stats().failed;
      await inner.close();
      // What the writer gave up at close (the database still away) is not stored: its files are kept.
      const lostAtClose = inner.stats().failed > before;
      closed = true;
      rotated.push(current);
      files.close(current);
      const finished = done();
      let kept = 0;
      for (const segment of rotated) {
        if (!lostAtClose && deletable(segment, finished)) files.remove(segment);
        else kept++;
      }
      rotated.length = 0;
      files.release();
      if (kept > 0)
        warn?.(
          `Task logs not yet stored are kept in ${files.dir} (${kept} file(s)); the next start writes them`,
        );
    },
  };
}
