import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { TaskLogRecord } from './types.js';

/**
 * The task log spool: an append-only file of the records a process hands to its log writer, written
 * (with one `write` call, so that it survives a kill of the process) before the call's answer goes out.
 * Files are rotated every ROTATE_MS, flushed to disk (`fsync`) every SYNC_MS, and deleted once every
 * record in them has been stored; a process started later replays the files of processes that are gone.
 *
 * A line is `{"k":"b"|"f","r":<record>}`: `f` a call's final record, `b` a record written as a streamed
 * call starts (its log id is then already with the client), stored as an interrupted call unless its
 * final record follows.
 *
 * `SpoolFiles` (the files, their rotation, flush to disk and claiming) also keeps the span spool's files
 * (`span-spool.ts`), in a folder of their own and with lines of their own.
 */
export interface SpoolLine {
  k: 'b' | 'f';
  r: TaskLogRecord;
}

export const SPOOL_FOLDER = 'task-log-spool';
const SUFFIX = '.jsonl';
const CLAIMED = '.replaying';

/** The instances of this process whose files are live (not to be replayed by another instance). */
const liveInstances = new Set<string>();

export interface Segment {
  file: string;
  fd: number | null;
  bytes: number;
  /** Dirty since the last fsync. */
  dirty: boolean;
  /** The writer's count of accepted records once the last final record of this file was accepted. */
  lastAccepted: number;
  /** Records of this file the writer dropped at its bound: kept here until written again. */
  overflow: Set<string>;
  /** Streamed calls begun in this file and not finished yet. */
  open: Set<string>;
}

export class SpoolFiles {
  readonly dir: string;
  readonly instance: string;
  private seq = 0;

  /** `folder`: the spool's folder in the data dir (the task logs' by default). */
  constructor(dataDir: string, folder = SPOOL_FOLDER) {
    this.dir = path.join(dataDir, folder);
    fs.mkdirSync(this.dir, { recursive: true });
    this.instance = `${process.pid}.${randomBytes(4).toString('hex')}`;
    liveInstances.add(this.instance);
  }

  open(): Segment {
    const file = path.join(this.dir, `${this.instance}.${String(++this.seq).padStart(8, '0')}${SUFFIX}`);
    const fd = fs.openSync(file, 'a');
    return { file, fd, bytes: 0, dirty: false, lastAccepted: 0, overflow: new Set(), open: new Set() };
  }

  /** Appends the line; returns its record's JSON text (what the writer is handed, made once). */
  append(segment: Segment, line: SpoolLine): string {
    if (segment.fd === null) throw new Error('spool segment closed');
    const record = JSON.stringify(line.r);
    // JSON.stringify(line) itself, without serialising the record twice.
    const text = `{"k":${JSON.stringify(line.k)},"r":${record}}\n`;
    fs.writeSync(segment.fd, text);
    segment.bytes += text.length;
    segment.dirty = true;
    return record;
  }

  /**
   * Appends lines already made (each ending in a newline) with one `write`; throws when they could not be
   * written whole (a full disk: the torn end is skipped when the file is read).
   */
  appendText(segment: Segment, text: string): void {
    if (segment.fd === null) throw new Error('spool segment closed');
    const bytes = Buffer.byteLength(text);
    const written = fs.writeSync(segment.fd, text);
    segment.bytes += bytes;
    segment.dirty = true;
    if (written < bytes) throw new Error(`only ${written} of ${bytes} bytes written`);
  }

  sync(segment: Segment, then?: () => void): void {
    const fd = segment.fd;
    if (fd === null || !segment.dirty) {
      then?.();
      return;
    }
    segment.dirty = false;
    fs.fsync(fd, () => then?.());
  }

  close(segment: Segment): void {
    const fd = segment.fd;
    if (fd === null) return;
    segment.fd = null;
    this.sync({ ...segment, fd }, () => fs.close(fd, () => {}));
  }

  remove(segment: Segment): void {
    this.close(segment);
    fs.rmSync(segment.file, { force: true });
  }

  removeFile(file: string): void {
    fs.rmSync(file, { force: true });
  }

  /** Gives a claimed file back (its replay could not finish): the next process to start claims it. */
  unclaim(file: string): void {
    const name = path.basename(file);
    if (!name.endsWith(CLAIMED)) return;
    const original = name.slice(0, name.lastIndexOf('.', name.length - CLAIMED.length - 1));
    try {
      fs.renameSync(file, path.join(this.dir, original));
    } catch {
      // Left claimed: taken again once this process is gone.
    }
  }

  /**
   * A file this instance keeps at its close, handed over: named as no live process's, so that a running
   * process takes it at its next look (the process that closed may live on: a cluster's primary does).
   */
  handOver(file: string): void {
    const name = path.basename(file);
    const own = `${process.pid}.`;
    if (!name.startsWith(own)) return;
    try {
      fs.renameSync(file, path.join(this.dir, `0.${name.slice(own.length)}`));
    } catch {
      // Kept under this process's name: taken once it is gone.
    }
  }

  /** This instance stops: its files become another instance's to replay. */
  release(): void {
    liveInstances.delete(this.instance);
  }

  /**
   * The files of instances that are gone (a process no longer running, or an instance of this process
   * that has closed), each claimed by renaming it so that two processes starting at once never replay
   * the same file. Claimed files left by a replay that was itself interrupted are taken again.
   */
  claimOrphans(): string[] {
    const claimed: string[] = [];
    for (const name of fs.readdirSync(this.dir).sort()) {
      const full = path.join(this.dir, name);
      if (name.endsWith(CLAIMED)) {
        const owner = name.slice(
          name.lastIndexOf('.', name.length - CLAIMED.length - 1) + 1,
          -CLAIMED.length,
        );
        if (!processAlive(Number(owner))) claimed.push(full);
        continue;
      }
      if (!name.endsWith(SUFFIX)) continue;
      const [pid, id] = name.split('.');
      const instance = `${pid}.${id}`;
      if (Number(pid) === process.pid ? liveInstances.has(instance) : processAlive(Number(pid))) continue;
      const target = `${full}.${process.pid}${CLAIMED}`;
      try {
        fs.renameSync(full, target);
        claimed.push(target);
      } catch {
        // Claimed by another process first.
      }
    }
    return claimed;
  }
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The non-empty lines of a spool file, as text (none when it cannot be read). */
export function readSpoolText(file: string): string[] {
  try {
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
  } catch {
    return [];
  }
}

/** The lines of a spool file (a torn last line, cut by a kill mid-write, is skipped). */
export function readSpoolFile(file: string): SpoolLine[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const lines: SpoolLine[] = [];
  for (const raw of text.split('\n')) {
    if (raw === '') continue;
    try {
      const line = JSON.parse(raw) as SpoolLine;
      if ((line.k === 'b' || line.k === 'f') && typeof line.r?.id === 'string') lines.push(line);
    } catch {
      // Torn.
    }
  }
  return lines;
}
