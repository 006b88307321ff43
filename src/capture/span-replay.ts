import {
  createSpanLane,
  type SpanJournal,
  type SpanLane,
  type SpanLaneSettings,
  type SpanSink,
} from './span-lane.js';
import { SpanSpool, type SpanSpoolOptions } from './span-spool.js';

/*
 * The span lane's spool: what the lane takes is written to the span spool (`span-spool.ts`) before the
 * export is answered, and what a process gone before left is taken again at the next start and every
 * few seconds after. The lines are the span sink's to make and read (a codec handed in by whoever knows
 * what a span is: capture does not).
 */

/** A span as a spool line and back: `encode` makes one line (ending in a newline). */
export interface SpanCodec<T> {
  encode(item: T): string;
  /** Null for a line that cannot be read (torn by a kill). */
  decode(line: string): T | null;
}

/** The span lane's journal in `spool`: each part it takes written as one append. */
export function spoolJournal<T>(spool: SpanSpool, encode: SpanCodec<T>['encode']): SpanJournal<T> {
  return {
    record(items, from, to, taken) {
      let text = '';
      for (let i = from; i < to; i++) text += encode(items[i] as T);
      return spool.record(text, taken);
    },
    settled: (done) => spool.settled(done),
  };
}

/**
 * Takes again the spans that processes gone before (killed, or stopped with the database away) had
 * spooled: each file's spans handed to `lane` (spooled again here as they are taken), then the file
 * deleted; a file whose spans find no room within `waitMs` is left for the next start, and so are the
 * files after it. A span already stored is skipped by the store. Returns how many spans were taken.
 */
export async function replaySpans<T>(
  spool: SpanSpool | null,
  lane: Pick<SpanLane<T>, 'writeAll'>,
  decode: SpanCodec<T>['decode'],
  waitMs: number,
  warn?: (message: string) => void,
): Promise<number> {
  if (!spool) return 0;
  let taken = 0;
  let left = 0;
  for (const file of spool.claimOrphans()) {
    // Once one file found no room, the others are not waited for (the start would wait once per file).
    if (left > 0) {
      spool.giveBack(file);
      left++;
      continue;
    }
    const spans: T[] = [];
    for (const line of spool.read(file)) {
      const item = decode(line);
      if (item !== null) spans.push(item);
    }
    if (await lane.writeAll(spans, waitMs)) {
      spool.replayed(file);
      taken += spans.length;
    } else {
      spool.giveBack(file);
      left++;
    }
  }
  if (taken > 0)
    warn?.(`Spans spooled by a stopped process: ${taken} taken again (those not yet stored are stored now)`);
  if (left > 0)
    warn?.(
      `Spans spooled by a stopped process: ${left} file(s) left in ${spool.dir} for the next start (no room in the trace store)`,
    );
  return taken;
}

/**
 * Replays spooled spans before serving (`start`, resolving with how many were taken) and then every
 * `everyMs` while the process runs: files left at the start for want of room, and files of processes
 * gone since (a worker killed and forked again), are taken without waiting for another start. One replay
 * at a time; `stop` ends the looking and waits for a replay under way (within its wait), which gives
 * back what it cannot take.
 */
export function spanReplayer<T>(
  spool: SpanSpool | null,
  lane: Pick<SpanLane<T>, 'writeAll'>,
  decode: SpanCodec<T>['decode'],
  times: { waitMs: number; everyMs: number },
  warn?: (message: string) => void,
): { start(): Promise<number>; stop(): Promise<void> } {
  let replaying: Promise<number> | null = null;
  let timer: NodeJS.Timeout | null = null;
  const once = (): Promise<number> =>
    (replaying ??= replaySpans(spool, lane, decode, times.waitMs, warn).finally(() => {
      replaying = null;
    }));
  return {
    async start() {
      const taken = await once();
      if (spool && !timer) {
        timer = setInterval(() => {
          once().catch((err: Error) => warn?.(`Spooled spans not taken again: ${err.message}`));
        }, times.everyMs);
        timer.unref();
      }
      return taken;
    },
    async stop() {
      if (timer) clearInterval(timer);
      await replaying?.catch(() => 0);
    },
  };
}

/** How long a replay waits for room in the lane (as an export does) before leaving files for later. */
const REPLAY_WAIT_MS = 5_000;
/** How often spooled spans are taken again: files left at a start for want of room, or of a process gone. */
const REPLAY_EVERY_MS = 5_000;

/** The capture processor's `spans` option: the span lane, its sink, its spool and its replay. */
export interface CaptureSpanOptions<T> extends SpanLaneSettings {
  /** The span sink (left out: attached later, `processor.spans.attach`, before `replay`). */
  store?: SpanSink<T>;
  /** A span as a spool line and back. */
  codec: SpanCodec<T>;
  /** The span spool in the data dir (left out: spans live only in memory until stored). */
  spool?: Omit<SpanSpoolOptions, 'warn'> | null;
  /** How long a replay waits for room (default 5 s), and how often the spool is looked at again (5 s). */
  replayWaitMs?: number;
  replayEveryMs?: number;
}

/** The span lane with its spool and replayer, as the processor holds it. */
export interface SpanCapture<T> {
  readonly lane: SpanLane<T>;
  /** Replays the spool (the lane's sink attached) and starts looking at it every few seconds. */
  replay(): Promise<number>;
  /** Stops the replays, closes the lane (flushing it), then the spool (what is held stays in files). */
  close(): Promise<void>;
}

export function createSpanCapture<T>(
  options: CaptureSpanOptions<T>,
  warn?: (message: string) => void,
): SpanCapture<T> {
  const spool = options.spool ? new SpanSpool({ ...options.spool, warn }) : null;
  const journal = spool ? spoolJournal(spool, options.codec.encode) : undefined;
  const lane = createSpanLane<T>({ ...options, journal, warn });
  const replayer = spanReplayer(
    spool,
    lane,
    options.codec.decode,
    { waitMs: options.replayWaitMs ?? REPLAY_WAIT_MS, everyMs: options.replayEveryMs ?? REPLAY_EVERY_MS },
    warn,
  );
  return {
    lane,
    async replay() {
      if (lane.attached) return await replayer.start();
      if (spool) warn?.(`Spooled spans are left in ${spool.dir}: the span lane has no sink to store them`);
      return 0;
    },
    async close() {
      await replayer.stop();
      await lane.close();
      spool?.close(); // Spans still held (the database away) stay in files another process takes.
    },
  };
}
