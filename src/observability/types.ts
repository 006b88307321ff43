/** What the engine, the gateway and the HTTP layer report; `createMetrics` implements it with prom-client. */

export type UpstreamOutcome = 'ok' | 'rate_limited' | 'error' | 'cancelled';

export interface EngineMetrics {
  /** One upstream call made by a run (judge or generation), with its latency in seconds. */
  upstreamCall(model: string, kind: 'judge' | 'generation', outcome: UpstreamOutcome, seconds: number): void;
  /** Per-sample rows stored (scored, error or missing). */
  positionsScored(count: number): void;
  /** A chunk of work started (+1) or ended (-1) in this process. */
  chunksInFlight(delta: number): void;
}

/** A monitor's counts for one evaluator, or its lag (read from the database at scrape time). */
export type MonitorSeries =
  | {
      monitor: string;
      name: string;
      evaluator: string;
      scored: number;
      passed: number;
      failed: number;
      errors: number;
      scoreSum: number;
    }
  | { monitor: string; name: string; lagSeconds: number };
