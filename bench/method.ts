/**
 * The measuring method the steady benches share (bench:gateway, bench:runs): figures that hold on a
 * machine other work shares.
 *
 * - CPU per call, not throughput: under outside load throughput mostly says who got the cores, while the
 *   CPU a server spends per call it answers barely moves. It is read from /proc (utime + stime of the whole
 *   process, so every thread — the log writer's included — counts), from the start of a measurement until
 *   the process is idle again (work left over when the load stops counts too), divided by the calls.
 * - At a fixed request rate (open loop), so target and baseline do the same work per second whatever
 *   their speed.
 * - Target and baseline alternate within a round, in at least five rounds of one run; the figure is the
 *   median of the ratios taken within each round, with their range. A ratio whose rounds spread by more
 *   than a stated bound is reported as such (`verdict: "too_noisy"`, no `ratio`), never as a result.
 * - The load average is printed with every figure.
 */
import fs from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** utime + stime of a process (every thread of it), microseconds, or null once it is gone. */
export function processCpuUs(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat (utime, stime), in clock ticks: 100 per second on Linux.
    return ((Number(fields[11]) + Number(fields[12])) / 100) * 1_000_000;
  } catch {
    return null;
  }
}

/** The summed CPU of several processes (a server and its helpers), microseconds. */
export function processesCpuUs(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (processCpuUs(pid) ?? 0), 0);
}

/** A process is idle once it used under this share of a core over QUIET_MS. */
const IDLE_SHARE = 0.05;
const POLL_MS = 50;
const QUIET_MS = 300;
const SETTLE_MAX_MS = 120_000;

/** Waits until every process in `pids` is idle; returns how long they stayed busy (ms). */
export async function settle(pids: readonly number[]): Promise<number> {
  const t0 = performance.now();
  let last = processesCpuUs(pids);
  let busyUntil = t0;
  while (performance.now() - t0 < SETTLE_MAX_MS) {
    await sleep(POLL_MS);
    const now = processesCpuUs(pids);
    if (now - last > POLL_MS * 1000 * IDLE_SHARE * pids.length) busyUntil = performance.now();
    else if (performance.now() - busyUntil >= QUIET_MS) break;
    last = now;
  }
  return Math.round(busyUntil - t0);
}

/**
 * CPU per call of `pids` over `work`, counted until they are idle again: `work` returns how many calls
 * were answered (the divisor), and may return extra figures kept beside.
 */
export async function cpuPerCall<T extends { calls: number }>(
  pids: readonly number[],
  work: () => Promise<T>,
): Promise<T & { cpu_us_per_call: number; settle_ms: number }> {
  const before = processesCpuUs(pids);
  const out = await work();
  const settleMs = await settle(pids);
  const used = processesCpuUs(pids) - before;
  return {
    ...out,
    cpu_us_per_call: out.calls > 0 ? Math.round(used / out.calls) : Number.NaN,
    settle_ms: settleMs,
  };
}

/** 1, 5 and 15 minute load averages, and the machine's cores. */
export function loadAverage(): { '1m': number; '5m': number; '15m': number; cores: number } {
  const [a, b, c] = os.loadavg().map((l) => Math.round(l * 100) / 100);
  return { '1m': a!, '5m': b!, '15m': c!, cores: os.availableParallelism() };
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = s.length / 2;
  return s.length % 2 ? s[Math.floor(mid)]! : (s[mid - 1]! + s[mid]!) / 2;
}

const r3 = (n: number) => Math.round(n * 1000) / 1000;

export interface RatioFigure {
  /** The median of the per-round ratios; absent when the rounds spread by more than `max_spread`. */
  ratio?: number;
  /** The same median, kept for reading when the figure was refused (it is no result then). */
  median_of_rounds: number;
  range: [number, number];
  /** (max − min) ÷ median of the per-round ratios. */
  spread: number;
  max_spread: number;
  verdict: 'result' | 'too_noisy';
  rounds: number[];
  target?: string;
  /** Whether the ratio meets `target` (only for a result). */
  meets_target?: boolean;
}

/**
 * The figure of per-round ratios: their median and range, refused (`too_noisy`, no `ratio`) when
 * (max − min) ÷ median exceeds `maxSpread`. `atMost`: the target the ratio should stay under.
 */
export function ratioFigure(ratios: readonly number[], maxSpread: number, atMost?: number): RatioFigure {
  const finite = ratios.filter((x) => Number.isFinite(x));
  const m = median(finite);
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  const spread = finite.length ? (hi - lo) / m : Number.POSITIVE_INFINITY;
  const noisy = !(spread <= maxSpread) || finite.length < ratios.length;
  return {
    ...(noisy ? {} : { ratio: r3(m) }),
    median_of_rounds: r3(m),
    range: [r3(lo), r3(hi)],
    spread: r3(spread),
    max_spread: maxSpread,
    verdict: noisy ? 'too_noisy' : 'result',
    rounds: ratios.map(r3),
    ...(atMost !== undefined ? { target: `<= ${atMost}` } : {}),
    ...(atMost !== undefined && !noisy ? { meets_target: m <= atMost } : {}),
  };
}

/** A difference (e.g. added latency, ms) over rounds: median and range; no spread bound (it may be ~0). */
export function differenceFigure(diffs: readonly number[], atMost?: number) {
  const m = median(diffs);
  return {
    median: r3(m),
    range: [r3(Math.min(...diffs)), r3(Math.max(...diffs))] as [number, number],
    rounds: diffs.map(r3),
    ...(atMost !== undefined ? { target: `<= ${atMost}`, meets_target: m <= atMost } : {}),
  };
}

/**
 * Runs `rounds` rounds of `steps` (each measured once per round), rotating their order from round to
 * round so that none always follows another's load. Returns each step's results, round by round.
 */
export async function alternate<T>(
  rounds: number,
  steps: readonly { name: string; run: (round: number) => Promise<T> }[],
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<Map<string, T[]>> {
  const out = new Map<string, T[]>(steps.map((s) => [s.name, []]));
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < steps.length; i++) {
      const step = steps[(i + round) % steps.length]!;
      const result = await step.run(round);
      out.get(step.name)!.push(result);
      log(`round ${round + 1}/${rounds} ${step.name}: ${JSON.stringify(result)}`);
    }
  }
  return out;
}

/** Per-round ratios of one figure of two steps' results. */
export function perRound<T>(
  results: Map<string, T[]>,
  a: string,
  b: string,
  pick: (r: T) => number,
): number[] {
  const xs = results.get(a) ?? [];
  const ys = results.get(b) ?? [];
  return xs.map((x, i) => pick(x) / pick(ys[i]!));
}

/** Per-round differences of one figure of two steps' results. */
export function perRoundDiff<T>(
  results: Map<string, T[]>,
  a: string,
  b: string,
  pick: (r: T) => number,
): number[] {
  const xs = results.get(a) ?? [];
  const ys = results.get(b) ?? [];
  return xs.map((x, i) => pick(x) - pick(ys[i]!));
}
