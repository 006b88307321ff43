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
