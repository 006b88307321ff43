import type { OtlpInflightCounts } from '../../observability/scrape-metrics.js';

/**
 * The OTLP body bytes the process holds at once: received, decoding or being stored, across every export
 * request. A request arriving when they reach the bound is answered 429 with Retry-After, which OTLP
 * exporters retry with back-off, instead of being taken into a queue that grows without end under a
 * flood of large exports (each holding its body, its decoded request and the time of a decode thread).
 * A request is always taken when none other is in flight, so that no request within the body limit is
 * refused for ever.
 */

/** How long a refused exporter is asked to wait: about what a large export takes to decode and store. */
export const RETRY_AFTER_S = 1;

/** A taken request's share of the bound; it grows as its body arrives and decompresses. */
export class InflightHold {
  #held = 0;
  #released = false;

  constructor(
    private readonly gate: OtlpInflight,
    expected: number,
  ) {
    this.atLeast(expected);
  }

  /** The request holds at least this many bytes now (its body so far, or decompressed). */
  atLeast(bytes: number): void {
    if (this.#released || bytes <= this.#held) return;
    this.gate.add(bytes - this.#held);
    this.#held = bytes;
  }

  /** The request is answered: its bytes leave the bound (once, however often called). */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.gate.add(-this.#held);
  }
}

export class OtlpInflight {
  #bytes = 0;
  #busy = 0;

  constructor(readonly maxBytes: number) {}

  /**
   * A hold for a request that announces `expected` bytes (its Content-Length, 0 when it has none), or null
   * when that would pass the bound while other requests are in flight (the request is then answered 429).
   */
  admit(expected: number): InflightHold | null {
    if (this.#bytes > 0 && this.#bytes + Math.max(1, expected) > this.maxBytes) {
      this.#busy += 1;
      return null;
    }
    return new InflightHold(this, expected);
  }

  /** A request answered 429 for another reason than this bound (the trace store's backlog): counted with those. */
  refused(): void {
    this.#busy += 1;
  }

  /** @internal Called by the holds. */
  add(delta: number): void {
    this.#bytes += delta;
  }

  counts(): OtlpInflightCounts {
    return { bytes: this.#bytes, busy: this.#busy };
  }
}
