import { usd } from './numbers.js';

/*
 * The one count of paid model calls: a judge's calls at one position, a grader's calls per model, a
 * chunk's calls by kind (judge, generation) until its rows are stored, a run's ledger until it is written.
 */

/** The token counts a provider reported for one call. */
export interface CallTokens {
  prompt_tokens: number;
  completion_tokens: number;
  /** The provider's own total when it gave one (else prompt + completion). */
  total_tokens?: number;
}

/** One call, as its counter sees it. */
export interface CountedCall {
  usage: CallTokens | null;
  /** USD, from the model's prices. */
  cost: number;
  /** False when the model has no price: the call is counted, its cost is 0. */
  priced?: boolean;
  latencyMs?: number;
}

/** What a set of calls used. */
export interface TallyCounts {
  calls: number;
  /** Calls of a model without a price. */
  unpriced: number;
  /** Calls whose answer reported its tokens. */
  reported: number;
  cost: number;
  prompt: number;
  completion: number;
  total: number;
  latencyMs: number;
}

export const noCounts = (): TallyCounts => ({
  calls: 0,
  unpriced: 0,
  reported: 0,
  cost: 0,
  prompt: 0,
  completion: 0,
  total: 0,
  latencyMs: 0,
});

function addInto(into: TallyCounts, from: TallyCounts): void {
  into.calls += from.calls;
  into.unpriced += from.unpriced;
  into.reported += from.reported;
  into.cost = usd(into.cost + from.cost);
  into.prompt += from.prompt;
  into.completion += from.completion;
  into.total += from.total;
  into.latencyMs += from.latencyMs;
}

/**
 * Counts calls under a key (the kind of call, the model). The keys given at construction are always
 * present (at zero); others appear with their first call.
 */
export class Tally<K extends string = string> {
  private counts: Map<K, TallyCounts>;
  private dirty = false;

  constructor(private readonly keys: readonly K[] = []) {
    this.counts = this.fresh();
  }

  private fresh(): Map<K, TallyCounts> {
    return new Map(this.keys.map((k) => [k, noCounts()]));
  }

  private entry(key: K): TallyCounts {
    let c = this.counts.get(key);
    if (!c) {
      c = noCounts();
      this.counts.set(key, c);
    }
    return c;
  }

  add(key: K, call: CountedCall): void {
    const u = call.usage;
    addInto(this.entry(key), {
      calls: 1,
      unpriced: call.priced === false ? 1 : 0,
      reported: u ? 1 : 0,
      cost: call.cost,
      prompt: u?.prompt_tokens ?? 0,
      completion: u?.completion_tokens ?? 0,
      total: u ? (u.total_tokens ?? u.prompt_tokens + u.completion_tokens) : 0,
      latencyMs: call.latencyMs ?? 0,
    });
    this.dirty = true;
  }

  /** Adds counts taken from another tally. */
  merge(counts: Partial<Record<K, TallyCounts>> | null): void {
    if (!counts) return;
    for (const [key, c] of Object.entries(counts) as [K, TallyCounts | undefined][]) {
      if (c) addInto(this.entry(key), c);
    }
    this.dirty = true;
  }

  /** The counts of one key (zero when it has none). */
  of(key: K): TallyCounts {
    return { ...(this.counts.get(key) ?? noCounts()) };
  }

  /** Every key's counts added up. */
  total(): TallyCounts {
    const out = noCounts();
    for (const c of this.counts.values()) addInto(out, c);
    return out;
  }

  /** Each key's counts (a copy). */
  byKey(): Record<K, TallyCounts> {
    const out = {} as Record<K, TallyCounts>;
    for (const [k, c] of this.counts) out[k] = { ...c };
    return out;
  }

  /** What was counted since the last take, and a fresh start (null: nothing was counted). */
  take(): Record<K, TallyCounts> | null {
    if (!this.dirty) return null;
    const out = this.byKey();
    this.counts = this.fresh();
    this.dirty = false;
    return out;
  }
}
