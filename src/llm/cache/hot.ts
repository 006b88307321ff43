import { isObject, type JsonObject } from '../../shared/json.js';
import { recordedOutput } from '../recorded-output.js';
import { replayFrames } from './replay.js';
import type { CacheEntry } from './store.js';

/**
 * How long an entry read from (or written to) the store answers from this process's memory before the
 * store is asked again: a `refresh` made by another process (a replica, a cluster worker) shows here
 * within this time; one made here shows at once. Never past the entry's own expiry.
 */
export const HOT_HOLD_MS = 1_000;
/** At most this many entries, and this many characters of answers, are held. */
const MAX_ENTRIES = 4_096;
const MAX_CHARS = 32 * 1024 * 1024;

/**
 * An entry as a hit answers from it: the stored bytes as they are, checked once when they were read or
 * written (never again per hit), the answer's text, and the stream a streamed hit replays, built once.
 */
export class HotEntry {
  private framesPlain: string | null = null;
  private framesUsage: string | null = null;
  private recorded: string | null = null;

  constructor(
    readonly entry: CacheEntry,
    /** The chat answer's text ('' for other kinds). */
    readonly text: string,
    readonly expiresAt: number,
  ) {}

  /** The chat-completion chunks of the stored completion (built on the first streamed hit, then kept). */
  frames(includeUsage: boolean): string {
    const known = includeUsage ? this.framesUsage : this.framesPlain;
    if (known !== null) return known;
    const value: unknown = JSON.parse(this.entry.bodyText);
    const built = replayFrames(isObject(value) ? value : {}, includeUsage);
    if (includeUsage) this.framesUsage = built;
    else this.framesPlain = built;
    return built;
  }

  /** The task log's output of the stored answer (made on the first hit, then kept). */
  output(): string {
    this.recorded ??= recordedOutput(this.body());
    return this.recorded;
  }

  /** A fresh parse of the stored bytes: each hit's caller gets an object of its own to read or change. */
  body(): JsonObject {
    const value: unknown = JSON.parse(this.entry.bodyText);
    return isObject(value) ? value : {};
  }
}

/** Recently read or written entries of this process, by cache key (which includes the project). */
export class HotEntries {
  private readonly entries = new Map<string, HotEntry>();
  private chars = 0;

  get(key: string, now = Date.now()): HotEntry | null {
    const hot = this.entries.get(key);
    if (!hot) return null;
    if (hot.expiresAt > now) return hot;
    this.drop(key, hot);
    return null;
  }

  /** Holds `entry` (already checked as an answer worth keeping) for HOT_HOLD_MS or until it expires. */
  put(
    key: string,
    entry: CacheEntry,
    text: string,
    expiresAt: number | undefined,
    now = Date.now(),
  ): HotEntry {
    const hot = new HotEntry(entry, text, Math.min(now + HOT_HOLD_MS, expiresAt ?? Number.POSITIVE_INFINITY));
    const old = this.entries.get(key);
    if (old) this.drop(key, old);
    if (entry.bodyText.length > MAX_CHARS / 4) return hot;
    this.entries.set(key, hot);
    this.chars += entry.bodyText.length;
    // Oldest first (the map keeps insertion order): they are also the first to expire.
    for (const [k, v] of this.entries) {
      if (this.entries.size <= MAX_ENTRIES && this.chars <= MAX_CHARS && v.expiresAt > now) break;
      this.drop(k, v);
    }
    return hot;
  }

  clear(): void {
    this.entries.clear();
    this.chars = 0;
  }

  private drop(key: string, hot: HotEntry): void {
    this.entries.delete(key);
    this.chars -= hot.entry.bodyText.length;
  }
}
