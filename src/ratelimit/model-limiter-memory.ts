import { type AbortHandler, unwatchAbort, watchAbort } from '../shared/abort-watch.js';
import type { ModelLimiter, ModelLimits, Permit } from './model-limiter.js';

/**
 * The in-process model limiter, and the local core the Redis limiter (./model-limiter-redis.ts) runs on.
 *
 * Per model: a FIFO of waiters, the calls in flight, a pause deadline and two GCRA arrival times.
 * RPM charges one request when a call starts; TPM is charged by `release(tokens)` once the usage is
 * known and may run into debt; a call waits while the TPM arrival time is more than a window ahead.
 * Both use burst = the per-minute figure, so the GCRA window is one minute for both.
 *
 * The engine calls acquire/release ~20,000 times a second, so the common case (a free slot, no pause,
 * no RPM/TPM, nobody queued) reads a few properties and returns a promise made once per model. The
 * permit is one object per model too: the contract is that `release` runs exactly once per grant.
 */

const WINDOW_MS = 60_000;

/** The limiter was closed: acquires still waiting, and any made afterwards, reject with it. */
export class LimiterClosedError extends Error {
  override readonly name = 'LimiterClosedError';
  constructor() {
    super('The model limiter is closed');
  }
}

/** The share of concurrency `c` split across `n` holders that the holder at `rank` gets. */
function shareOf(c: number, n: number, rank: number): number {
  return Math.floor(c / n) + (rank < c % n ? 1 : 0);
}

/**
 * What this holder may run of concurrency `c` split across `members` holders (0 or 1: unsplit): its share,
 * less what the other holders still run beyond theirs (calls they started under an earlier, larger share),
 * and nothing new while some holder has not yet confirmed the current membership.
 */
function capOf(s: ModelState, c: number): number {
  const n = s.members;
  if (n <= 1) return c;
  const others = s.others;
  if (others === null) return 0;
  let held = 0;
  for (let rank = 0; rank < others.length; rank++) {
    const active = others[rank]!;
    if (rank !== s.rank && active > 0) held += Math.max(0, active - shareOf(c, n, rank));
  }
  return Math.max(0, shareOf(c, n, s.rank) - held);
}

class Waiter implements AbortHandler {
  prev: Waiter | null = null;
  next: Waiter | null = null;
  resolve!: (permit: Permit) => void;
  reject!: (reason: unknown) => void;

  constructor(
    readonly core: LocalModelLimiter,
    readonly state: ModelState,
    readonly limits: ModelLimits,
    readonly signal: AbortSignal,
  ) {}

  onAbort(reason: unknown): void {
    this.core.unlink(this.state, this);
    this.reject(reason);
    // The head may have been what held the others back (another call's limits).
    this.core.pump(this.state);
  }
}

/** One model's local state. `members`/`rank` split the concurrency cap (set by the Redis limiter). */
export class ModelState {
  active = 0;
  /** Unix ms; 0 when no pause is known to be in force. */
  pausedUntil = 0;
  rpmTat = 0;
  tpmTat = 0;
  /** The TPM limit of the latest acquire: what `release(tokens)` charges against. */
  tpm: number | null = null;
  /** Holders the concurrency is split across (0 or 1: this process has all of it) and this one's rank. */
  members = 0;
  rank = 0;
  /**
   * The calls in flight each holder reported (by rank) after it saw the current membership, or null while
   * one of them has not reported since the membership changed (its calls in flight are unknown).
   */
  others: number[] | null = [];
  /** Acquires so far; the Redis limiter compares it between refreshes to tell whether the model is in use. */
  uses = 0;
  head: Waiter | null = null;
  tail: Waiter | null = null;
  timer: NodeJS.Timeout | null = null;
  timerAt = 0;
  readonly permit: Permit;
  /** Resolved once and handed out on every immediate grant. */
  readonly ready: Promise<Permit>;

  constructor(core: LocalModelLimiter) {
    this.permit = { release: (tokens: number) => core.release(this, tokens) };
    this.ready = Promise.resolve(this.permit);
  }
}

function onTimer(core: LocalModelLimiter, s: ModelState): void {
  s.timer = null;
  core.pump(s);
}

export class LocalModelLimiter implements ModelLimiter {
  private readonly models = new Map<string, ModelState>();
  private closed = false;

  state(model: string): ModelState {
    let s = this.models.get(model);
    if (s === undefined) {
      s = new ModelState(this);
      this.models.set(model, s);
    }
    return s;
  }

  acquire(model: string, limits: ModelLimits, signal: AbortSignal): Promise<Permit> {
    const s = this.state(model);
    s.uses++;
    s.tpm = limits.tpm;
    if (
      s.head === null &&
      s.pausedUntil === 0 &&
      limits.rpm === null &&
      limits.tpm === null &&
      s.active < capOf(s, limits.concurrency) &&
      !this.closed
    ) {
      s.active++;
      return s.ready;
    }
    return this.acquireSlow(s, limits, signal);
  }

  private acquireSlow(s: ModelState, limits: ModelLimits, signal: AbortSignal): Promise<Permit> {
    if (this.closed) return Promise.reject(new LimiterClosedError());
    if (signal.aborted) return Promise.reject(signal.reason);
    if (s.head === null && s.active < capOf(s, limits.concurrency)) {
      const now = Date.now();
      const until = this.blockedUntil(s, limits, now);
      if (until === 0) {
        this.start(s, limits, now);
        return s.ready;
      }
      this.wakeAt(s, until, now);
    }
    const w = new Waiter(this, s, limits, signal);
    const promise = new Promise<Permit>((resolve, reject) => {
      w.resolve = resolve;
      w.reject = reject;
    });
    w.prev = s.tail;
    if (s.tail === null) s.head = w;
    else s.tail.next = w;
    s.tail = w;
    watchAbort(signal, w);
    return promise;
  }

  release(s: ModelState, tokens: number): void {
    s.active--;
    if (tokens > 0 && s.tpm !== null) {
      s.tpmTat = Math.max(s.tpmTat, Date.now()) + (tokens * WINDOW_MS) / s.tpm;
    }
    if (s.head !== null) this.pump(s);
  }

  /** Starts queued calls in order while the head may start; schedules the one timer when time must pass. */
  pump(s: ModelState): void {
    while (s.head !== null) {
      const w = s.head;
      if (w.signal.aborted) {
        // Its abort is being delivered (signals fire their waiters one by one): never grant it.
        this.unlink(s, w);
        unwatchAbort(w.signal, w);
        w.reject(w.signal.reason);
        continue;
      }
      if (s.active >= capOf(s, w.limits.concurrency)) return;
      const now = Date.now();
      const until = this.blockedUntil(s, w.limits, now);
      if (until !== 0) {
        this.wakeAt(s, until, now);
        return;
      }
      this.start(s, w.limits, now);
      this.unlink(s, w);
      unwatchAbort(w.signal, w);
      w.resolve(s.permit);
    }
  }

  unlink(s: ModelState, w: Waiter): void {
    if (w.prev === null) s.head = w.next;
    else w.prev.next = w.next;
    if (w.next === null) s.tail = w.prev;
    else w.next.prev = w.prev;
    w.prev = null;
    w.next = null;
  }

  /** When a call with `limits` may start, by pause, TPM debt and RPM (0: now). Concurrency is checked apart. */
  private blockedUntil(s: ModelState, limits: ModelLimits, now: number): number {
    let until = 0;
    if (s.pausedUntil !== 0) {
      if (s.pausedUntil > now) until = s.pausedUntil;
      else s.pausedUntil = 0;
    }
    if (limits.tpm !== null && s.tpmTat - WINDOW_MS > now) until = Math.max(until, s.tpmTat - WINDOW_MS);
    if (limits.rpm !== null) {
      const allowAt = Math.max(s.rpmTat, now) + WINDOW_MS / limits.rpm - WINDOW_MS;
      if (allowAt > now) until = Math.max(until, allowAt);
    }
    return until;
  }

  private start(s: ModelState, limits: ModelLimits, now: number): void {
    if (limits.rpm !== null) s.rpmTat = Math.max(s.rpmTat, now) + WINDOW_MS / limits.rpm;
    s.active++;
  }

  /** One timer per model: an earlier one already set stays (the pump it runs reschedules). */
  private wakeAt(s: ModelState, until: number, now: number): void {
    if (s.timer !== null) {
      if (s.timerAt <= until) return;
      clearTimeout(s.timer);
    }
    s.timerAt = until;
    s.timer = setTimeout(onTimer, Math.max(1, Math.ceil(until - now)), this, s);
  }

  /** Extends the model's pause to `until` (Unix ms); never shortens it. */
  pauseUntil(model: string, until: number): void {
    const s = this.state(model);
    if (until > s.pausedUntil && until > Date.now()) s.pausedUntil = until;
  }

  async pause(model: string, ms: number): Promise<void> {
    this.pauseUntil(model, Date.now() + ms);
  }

  pausedFor(model: string): number {
    const s = this.models.get(model);
    if (s === undefined || s.pausedUntil === 0) return 0;
    return Math.max(0, s.pausedUntil - Date.now());
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.models.values()) {
      if (s.timer !== null) clearTimeout(s.timer);
      s.timer = null;
      while (s.head !== null) {
        const w = s.head;
        this.unlink(s, w);
        unwatchAbort(w.signal, w);
        w.reject(new LimiterClosedError());
      }
    }
  }
}

export function createMemoryModelLimiter(): ModelLimiter {
  return new LocalModelLimiter();
}
