import type { Config } from '../../config.js';
import { PromiseCache } from '../../shared/promise-cache.js';
import { type ScoreInput, type ScoreOutcome, type Scorer, ScorerSetupError } from '../types.js';
import { Lane, type LaneContext } from './lane.js';
import { createWorkerPool, type WorkerPool } from './pool.js';
import {
  isRoot,
  type PipSettings,
  type PythonInstall,
  resolvePython,
  type SandboxMode,
  type SandboxSettings,
  which,
  workerLaunch,
} from './sandbox.js';
import { createVenvCache, type VenvCache } from './venv.js';
import { WorkerProcess, WorkerStartError } from './worker.js';

export interface CodeScorerOptions {
  /** The interpreter (EVALGATE_PYTHON); a shim is resolved to the real installation. */
  python: string;
  /** Virtualenvs are cached under `<dataDir>/venvs`. */
  dataDir: string;
  sandbox: SandboxSettings;
  pip: PipSettings;
  /** EVALGATE_UNSAFE_CODE_EVALUATORS: run without bubblewrap (rlimits only) when it cannot start. */
  allowUnsafe: boolean;
  /** Workers running at once in this process (EVALGATE_CODE_WORKERS). */
  workers: number;
  /** Workers one scorer may use in parallel; defaults to `workers`. */
  workersPerScorer?: number;
  /** Positions per request line (EVALGATE_CODE_BATCH_SIZE). */
  batchSize: number;
  /** Wall-clock limit of one sample (EVALGATE_SANDBOX_TIMEOUT_MS). */
  timeoutMs: number;
  /** A worker is replaced after this many samples (EVALGATE_SANDBOX_RECYCLE_SAMPLES). */
  recycleAfter: number;
  startTimeoutMs?: number;
  /** Characters of printed output kept per sample. */
  logLimit?: number;
  /** What scorers of one process share (built by `createServices`); a scorer made without one has its own. */
  runtime?: CodeRuntime;
  /** Injected in tests; default to the runtime's. */
  pool?: WorkerPool;
  venvCache?: VenvCache;
}

/**
 * What the code evaluators of one process share: the worker pool that bounds how many run at once, the
 * virtualenv cache, the sandbox probes and the Python look-ups. Built once by the composition root
 * (sized from its config) and closed by it.
 */
export interface CodeRuntime {
  pool: WorkerPool;
  venvCache: VenvCache;
  probes: PromiseCache<string, Probe>;
  pythons: PromiseCache<string, PythonInstall>;
  close(): void;
}

export function createCodeRuntime(options: Pick<CodeScorerOptions, 'workers' | 'sandbox'>): CodeRuntime {
  const timers = new Set<NodeJS.Timeout>();
  const probes = new PromiseCache<string, Probe>();
  const pythons = new PromiseCache<string, PythonInstall>();
  return {
    pool: createWorkerPool(options.workers, options.sandbox.uidBase),
    venvCache: createVenvCache(),
    probes,
    pythons,
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      probes.clear();
      pythons.clear();
    },
  };
}

export interface CodeEvaluatorSpec {
  id: string;
  source: string;
  requirements: readonly string[] | null;
}

export interface SandboxStatus {
  available: boolean;
  reason?: string;
}

export function codeScorerOptions(config: Config): CodeScorerOptions {
  const code = config.codeEvaluators;
  return {
    python: config.python,
    dataDir: config.dataDir,
    sandbox: { bwrap: code.sandbox.bwrap, limits: code.sandbox.limits, uidBase: code.sandbox.uidBase },
    pip: code.pip,
    allowUnsafe: code.unsafe,
    workers: code.workers,
    batchSize: code.batchSize,
    timeoutMs: code.sandbox.timeoutMs,
    recycleAfter: code.sandbox.recycleAfter,
  };
}

interface Probe extends SandboxStatus {
  mode: Exclude<SandboxMode, 'unsafe'>;
  bwrap: string;
}

/** Starts one sandboxed worker and scores one sample with it, once per (bwrap, python, limits). */
function probe(options: CodeScorerOptions, runtime: CodeRuntime): Promise<Probe> {
  const key = JSON.stringify([options.sandbox, options.python]);
  return runtime.probes.get(key, async () => {
    const found = await runProbe(options, runtime);
    // A failed probe is tried again a minute later (the machine may only have been overloaded).
    if (!found.available) setTimeout(() => runtime.probes.delete(key), 60_000).unref();
    return found;
  });
}

async function runProbe(options: CodeScorerOptions, runtime: CodeRuntime): Promise<Probe> {
  const mode = isRoot() ? 'privileged' : 'userns';
  const bwrap = which(options.sandbox.bwrap);
  if (!bwrap) {
    const reason = `bubblewrap (${options.sandbox.bwrap}) is not installed; install the bubblewrap package`;
    return { available: false, reason, mode, bwrap: options.sandbox.bwrap };
  }
  let worker: WorkerProcess | null = null;
  try {
    const python = await resolvePython(options.python, runtime.pythons);
    const uid = mode === 'privileged' ? options.sandbox.uidBase - 1 : null;
    worker = await WorkerProcess.start(
      workerLaunch(mode, options.sandbox, bwrap, python, null, uid),
      'def evaluate(sample, ground_truth, baseline):\n    return 1\n',
      { startTimeoutMs: 30_000, logLimit: 100 },
    );
    const result = await worker.run('[[null,null,null]]', 1, 30_000);
    if (result.kind !== 'ok' || result.results[0] !== 1)
      throw new Error(`probe sample failed: ${result.kind}`);
    return { available: true, mode, bwrap };
  } catch (err) {
    return { available: false, reason: `bubblewrap cannot start: ${(err as Error).message}`, mode, bwrap };
  } finally {
    await worker?.close();
  }
}

/** Whether code evaluators can run sandboxed on this machine (probed once, then cached). */
export async function sandboxStatus(config: Config, runtime?: CodeRuntime): Promise<SandboxStatus> {
  const options = codeScorerOptions(config);
  return sandboxStatusOf(runtime ? { ...options, runtime } : options);
}

/** The same, for scorer options of one's own (the sandbox runner's). */
export async function sandboxStatusOf(options: CodeScorerOptions): Promise<SandboxStatus> {
  const { available, reason } = await probe(options, options.runtime ?? createCodeRuntime(options));
  return reason === undefined ? { available } : { available, reason };
}

/** Called by the server at start: running user code without a sandbox deserves a loud warning. */
export function warnIfUnsafeCodeEvaluators(config: Config, log: { warn(message: string): void }): void {
  if (!config.codeEvaluators.unsafe) return;
  log.warn(
    'EVALGATE_UNSAFE_CODE_EVALUATORS=1: where bubblewrap cannot start, code evaluators run WITHOUT a ' +
      'sandbox (rlimits only); their Python code can read the files and reach the network this service can',
  );
}

async function resolveMode(
  options: CodeScorerOptions,
  runtime: CodeRuntime,
): Promise<{ mode: SandboxMode; bwrap: string }> {
  const status = await probe(options, runtime);
  if (status.available) return { mode: status.mode, bwrap: status.bwrap };
  if (options.allowUnsafe) return { mode: 'unsafe', bwrap: status.bwrap };
  throw new ScorerSetupError(
    'sandbox_unavailable',
    status.reason ?? 'the code evaluator sandbox is unavailable',
  );
}

const MIN_CHUNK = 64;

class CodeScorer implements Scorer {
  private readonly lanes: Lane[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly ctx: LaneContext,
    private readonly maxLanes: number,
    private readonly batchSize: number,
    first: Lane,
  ) {
    this.lanes.push(first);
  }

  scoreBatch(inputs: ScoreInput[], signal: AbortSignal): Promise<ScoreOutcome[]> {
    // Calls are serialised: a lane belongs to one batch at a time.
    const run = this.queue.then(() => this.score(inputs, signal));
    this.queue = run.catch(() => {});
    return run;
  }

  private async score(inputs: ScoreInput[], signal: AbortSignal): Promise<ScoreOutcome[]> {
    if (this.closed) throw new Error('scorer is closed');
    const outcomes: ScoreOutcome[] = new Array(inputs.length);
    // Chunks of at most batchSize, small enough that every lane gets work, not so small that the
    // per-line overhead dominates.
    const size = Math.min(this.batchSize, Math.max(MIN_CHUNK, Math.ceil(inputs.length / this.maxLanes)));
    const lanesWanted = Math.min(this.maxLanes, Math.ceil(inputs.length / size));
    let next = 0;
    const work = async (lane: Lane) => {
      while (next < inputs.length) {
        const start = next;
        const end = Math.min(inputs.length, start + size);
        next = end;
        const release = await this.ctx.pool.acquire(signal);
        try {
          const chunk = await lane.run(inputs.slice(start, end), signal);
          chunk.forEach((o, j) => {
            outcomes[start + j] = o;
          });
        } finally {
          release();
        }
      }
    };
    while (this.lanes.length < lanesWanted) this.lanes.push(new Lane(this.ctx));
    // Wait for every lane to settle (an abort stops them all) before the next batch may use them.
    const settled = await Promise.allSettled(this.lanes.slice(0, lanesWanted).map(work));
    for (const s of settled) if (s.status === 'rejected') throw s.reason;
    return outcomes;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    await Promise.all(this.lanes.map((lane) => lane.close()));
  }
}

/**
 * Prepares a code evaluator for one launch: checks the sandbox, builds (or reuses) the virtualenv of
 * its requirements and starts a first worker so that a source that fails to load fails the run.
 */
export async function createCodeScorer(
  options: CodeScorerOptions,
  evaluator: CodeEvaluatorSpec,
): Promise<Scorer> {
  const runtime = options.runtime ?? createCodeRuntime(options);
  const { mode, bwrap } = await resolveMode(options, runtime);
  let python: PythonInstall;
  try {
    python = await resolvePython(options.python, runtime.pythons);
  } catch (err) {
    throw new ScorerSetupError('python_unavailable', (err as Error).message);
  }
  const requirements = evaluator.requirements ?? [];
  const venvDir = requirements.length
    ? await (options.venvCache ?? runtime.venvCache).ensure({
        dataDir: options.dataDir,
        python,
        requirements,
        mode,
        bwrap,
        pip: options.pip,
      })
    : null;
  const pool = options.pool ?? runtime.pool;
  const ctx: LaneContext = {
    launch: (uid) => workerLaunch(mode, options.sandbox, bwrap, python, venvDir, uid),
    source: evaluator.source,
    pool,
    ownUids: mode !== 'userns' && isRoot(),
    timeoutMs: options.timeoutMs,
    startTimeoutMs: options.startTimeoutMs ?? 30_000,
    recycleAfter: options.recycleAfter,
    cpuSeconds: options.sandbox.limits.cpuSeconds,
    logLimit: options.logLimit ?? 4096,
  };
  const first = new Lane(ctx);
  const release = await pool.acquire();
  try {
    await first.start();
  } catch (err) {
    if (err instanceof WorkerStartError && err.code !== 'worker_start_failed') {
      throw new ScorerSetupError(err.code, `evaluator ${evaluator.id}: ${err.message}`);
    }
    throw new ScorerSetupError('worker_start_failed', (err as Error).message);
  } finally {
    release();
  }
  const lanes = Math.max(1, Math.min(options.workersPerScorer ?? options.workers, pool.size));
  return new CodeScorer(ctx, lanes, Math.max(1, options.batchSize), first);
}
