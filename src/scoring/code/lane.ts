import { outcomeOf, type ScoreInput, type ScoreOutcome } from '../types.js';
import type { WorkerPool } from './pool.js';
import type { WorkerLaunch } from './sandbox.js';
import { type WireResult, WorkerProcess, WorkerStartError } from './worker.js';

/** Everything a lane needs to (re)start workers for one evaluator. */
export interface LaneContext {
  /** The command line of a worker; `uid` is its own uid when workers drop privileges. */
  launch(uid: number | null): WorkerLaunch;
  source: string;
  pool: WorkerPool;
  /** Whether each worker gets its own uid from the pool (the service runs as root). */
  ownUids: boolean;
  timeoutMs: number;
  startTimeoutMs: number;
  recycleAfter: number;
  cpuSeconds: number;
  logLimit: number;
}

function errorOutcome(
  code: string,
  message: string,
  latencyMs = 0,
  logs: string | null = null,
): ScoreOutcome {
  return outcomeOf({ error: { code, message }, latencyMs, logs });
}

export function fromWire(result: WireResult, latencyUs: number): ScoreOutcome {
  const latencyMs = latencyUs / 1000;
  if (typeof result === 'number') return outcomeOf({ score: result, latencyMs });
  if (typeof result === 'boolean') return outcomeOf({ score: result ? 1 : 0, passed: result, latencyMs });
  const [score, passed, reason, error, logs] = result;
  if (error) return outcomeOf({ error: { code: error[0], message: error[1] }, logs, latencyMs });
  return outcomeOf({ score, passed, reason, logs, latencyMs });
}

type ItemDict = Record<'id' | 'input' | 'output' | 'expected' | 'metadata' | 'raw', unknown> & {
  turns?: unknown[];
  tool_calls?: unknown[];
  tool_step?: unknown;
};

function itemDict(item: ScoreInput['sample']): ItemDict | null {
  if (!item) return null;
  return {
    id: item.id,
    input: item.input ?? null,
    output: item.output ?? null,
    expected: item.expected ?? null,
    metadata: item.metadata ?? {},
    raw: item.raw ?? null,
    ...(item.session ? { turns: item.session.turns, tool_calls: item.session.tool_calls } : {}),
    ...(item.session?.tool_step ? { tool_step: item.session.tool_step } : {}),
  };
}

/** The runner's view of one position: [sample, ground_truth, baseline], each an item dict or null. */
function positionTriple(input: ScoreInput): [ItemDict | null, ItemDict | null, ItemDict | null] {
  return [itemDict(input.sample), itemDict(input.groundTruth), itemDict(input.baseline)];
}

/** One JSON.stringify per batch: much cheaper than one per position. */
function encode(inputs: ScoreInput[], which: number[]): string {
  return JSON.stringify(which.map((i) => positionTriple(inputs[i]!)));
}

/** Positions that cannot be encoded (a BigInt, a cycle) get an error instead of failing the batch. */
function encodable(inputs: ScoreInput[], which: number[], outcomes: ScoreOutcome[]): number[] {
  return which.filter((i) => {
    try {
      JSON.stringify(positionTriple(inputs[i]!));
      return true;
    } catch (err) {
      outcomes[i] = errorOutcome(
        'invalid_input',
        `position cannot be sent to Python: ${(err as Error).message}`,
      );
      return false;
    }
  });
}

/**
 * One worker slot of a scorer: owns at most one live worker, restarts it after a timeout or a crash
 * and recycles it after `recycleAfter` samples or half its CPU-seconds budget.
 */
export class Lane {
  private worker: WorkerProcess | null = null;
  private uid: number | null = null;

  constructor(private readonly ctx: LaneContext) {}

  /** Starts the worker now (to report a source that fails to load before any sample runs). */
  async start(): Promise<void> {
    await this.ensure();
  }

  private async ensure(): Promise<WorkerProcess> {
    const current = this.worker;
    if (current?.alive) {
      const worn =
        current.exhausted ||
        current.samples >= this.ctx.recycleAfter ||
        current.cpuSeconds >= this.ctx.cpuSeconds / 2;
      if (!worn) return current;
      await current.close();
    }
    this.retire();
    this.uid = this.ctx.ownUids ? this.ctx.pool.allocateUid() : null;
    try {
      this.worker = await WorkerProcess.start(this.ctx.launch(this.uid), this.ctx.source, {
        startTimeoutMs: this.ctx.startTimeoutMs,
        logLimit: this.ctx.logLimit,
      });
    } catch (err) {
      this.retire();
      throw err;
    }
    return this.worker;
  }

  private retire(): void {
    this.worker?.kill();
    this.worker = null;
    if (this.uid !== null) this.ctx.pool.releaseUid(this.uid);
    this.uid = null;
  }

  /**
   * Scores encoded positions. A sample that times out or takes the worker down gets an error; the
   * worker is restarted and the samples without a result are sent again. Throws only on abort.
   */
  async run(inputs: ScoreInput[], signal: AbortSignal): Promise<ScoreOutcome[]> {
    const outcomes: ScoreOutcome[] = new Array(inputs.length);
    let pending = inputs.map((_, i) => i);
    let payload: string;
    try {
      payload = encode(inputs, pending);
    } catch {
      pending = encodable(inputs, pending, outcomes);
      payload = encode(inputs, pending);
    }
    while (pending.length > 0) {
      signal.throwIfAborted();
      let worker: WorkerProcess;
      try {
        worker = await this.ensure();
      } catch (err) {
        const code = err instanceof WorkerStartError ? err.code : 'worker_start_failed';
        for (const i of pending) outcomes[i] = errorOutcome(code, (err as Error).message);
        break;
      }
      const result = await worker.run(payload, pending.length, this.ctx.timeoutMs, signal);
      if (result.kind === 'ok') {
        result.results.forEach((wire, j) => {
          outcomes[pending[j]!] = fromWire(wire, result.latenciesUs[j] ?? 0);
        });
        pending = pending.slice(result.results.length);
        if (pending.length > 0) payload = encode(inputs, pending);
        continue;
      }
      const stderr = worker.stderr.trim() || null;
      this.retire();
      if (result.kind === 'aborted') signal.throwIfAborted();
      if (result.kind === 'timeout') {
        outcomes[pending[result.index]!] = errorOutcome(
          'timeout',
          `evaluate did not return within ${this.ctx.timeoutMs} ms; the worker was restarted`,
          this.ctx.timeoutMs,
          stderr,
        );
        pending.splice(result.index, 1);
      } else if (result.kind === 'crashed' && result.index !== null) {
        outcomes[pending[result.index]!] = errorOutcome(
          'worker_crashed',
          `the worker died while evaluating this sample (${result.detail})`,
          0,
          stderr,
        );
        pending.splice(result.index, 1);
      } else if (result.kind === 'crashed') {
        for (const i of pending) outcomes[i] = errorOutcome('worker_crashed', result.detail, 0, stderr);
        pending = [];
      }
      if (pending.length > 0) payload = encode(inputs, pending);
    }
    return outcomes;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    if (worker) await worker.close();
    this.retire();
  }
}
