import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';

export interface LoadSpec {
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** The n-th request's body (n from 0, warm-up included), in place of `body`. */
  bodyOf?: (n: number) => string;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /**
   * When to start (epoch ms): the load waits until then before its warm-up, so that several load
   * processes given the same time measure the same window. Absent: at once.
   */
  startAt?: number;
  /**
   * Requests started per second over all workers (open loop while `concurrency` allows): each request
   * waits for its slot, so that the load is the same whatever the target's speed. Absent: closed loop.
   */
  ratePerS?: number;
}

export interface LoadResult {
  /** Successful requests in the measured window. */
  requests: number;
  /** Successful requests over the whole run, warm-up included. */
  completed: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  ttfb_p50_ms: number;
  ttfb_p99_ms: number;
  errors: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/**
 * Closed-loop load: `concurrency` workers, each sending the next request as soon as the last one's
 * body has been read to the end. Latency is to the last byte; TTFB to the first body byte.
 */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  if (spec.startAt !== undefined) {
    const wait = spec.startAt - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    // Late: this process's window starts after the others'; say so rather than add it up silently.
    else process.stderr.write(`load: started ${-wait} ms after startAt\n`);
  }
  const pool = new Pool(spec.origin, { connections: spec.concurrency, pipelining: 1 });
  const latencies: number[] = [];
  const ttfbs: number[] = [];
  let errors = 0;
  let completed = 0;
  let measuring = false;
  let stopped = false;
  const paceFrom = performance.now();
  let slot = 0;
  let sent = 0;
  const interval = spec.ratePerS ? 1000 / spec.ratePerS : 0;

  async function worker(): Promise<void> {
    while (!stopped) {
      if (interval > 0) {
        const wait = paceFrom + slot++ * interval - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        if (stopped) break;
      }
      const t0 = performance.now();
      let first = -1;
      try {
        const res = await pool.request({
          method: 'POST',
          path: spec.path,
          headers: spec.headers,
          body: spec.bodyOf ? spec.bodyOf(sent++) : spec.body,
        });
        for await (const _chunk of res.body) if (first < 0) first = performance.now();
        const t1 = performance.now();
        if (res.statusCode !== 200) {
          errors++;
          continue;
        }
        completed++;
        if (measuring) {
          latencies.push(t1 - t0);
          ttfbs.push((first < 0 ? t1 : first) - t0);
        }
      } catch {
        errors++;
      }
    }
  }

  const workers = Array.from({ length: spec.concurrency }, () => worker());
  await new Promise((r) => setTimeout(r, spec.warmupMs));
  const errorsBefore = errors;
  measuring = true;
  const start = performance.now();
  await new Promise((r) => setTimeout(r, spec.durationMs));
  measuring = false;
  const elapsed = (performance.now() - start) / 1000;
  stopped = true;
  await Promise.all(workers);
  await pool.close();
  latencies.sort((a, b) => a - b);
  ttfbs.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    completed,
    rps: Math.round(latencies.length / elapsed),
    p50_ms: round(percentile(latencies, 50)),
    p99_ms: round(percentile(latencies, 99)),
    ttfb_p50_ms: round(percentile(ttfbs, 50)),
    ttfb_p99_ms: round(percentile(ttfbs, 99)),
    errors: errors - errorsBefore,
  };
}
