import type { Kysely } from 'kysely';
import type { Database, RunChunkTable } from '../db/schema.js';
import type { EngineMetrics } from '../observability/types.js';
import type { Scorer, ScorerSetupError } from '../scoring/types.js';
import { newId, nowIso } from '../shared/ids.js';
import { parseJson } from '../shared/json.js';
import { PromiseCache } from '../shared/promise-cache.js';
import { LIVE } from '../shared/run-status.js';
import { aggregate, type LaunchOutcome } from './aggregate.js';
import { type ChunkDeps, ChunkWork } from './chunk.js';
import { RunCancelled } from './errors.js';
import type { EvaluatorSnapshot, PlannedSide, ReadSide, RunPlan } from './plan.js';
import { isGenerated, layout as layOut } from './plan.js';
import type { GenerationOf, ItemReader } from './positions.js';
import { runMetrics } from './progress.js';
import { type CallDeps, RunState } from './run-state.js';
import { ScorerPool } from './scorer-pool.js';
import * as chunks from './store/chunks.js';
import { findRunCounters, loadRun, runFlags } from './store/runs.js';
import type { RunError } from './store/transitions.js';
import * as transitions from './store/transitions.js';

/** Everything execution needs, as a plain object of functions (built once by the composition root). */
export interface EngineDeps extends CallDeps {
  db: Kysely<Database>;
  readItems: ItemReader;
  /** How a generate side builds its requests and keeps its answers (its source kind's). */
  generation: GenerationOf;
  /** Whether the ground-truth side is no reference for the sample (see `ChunkDeps`). */
  noReference(sides: RunPlan['sides']): boolean;
  /** The number of items a read side's source holds (its source kind's count). */
  countItems(side: ReadSide): Promise<number>;
  /** The app's scorer kinds (see `ChunkDeps`). */
  scorerKinds: ChunkDeps['scorerKinds'];
  createCodeScorer(evaluator: EvaluatorSnapshot): Promise<Scorer>;
  sandbox(): Promise<{ available: boolean; reason?: string }>;
  metrics: EngineMetrics;
  /** Positions per chunk. */
  chunkSize: number;
  /** An unused scorer is closed after this long. */
  scorerIdleMs: number;
  /** This process, recorded as the run's `process_id` by the process that prepares it. */
  workerId: string;
  /** Told of each chunk's stored rows (see `ChunkDeps`). */
  onScored?: ChunkDeps['onScored'];
}

/** One unit of work: positions [from, to) of one launch of a run. */
export interface ChunkRef {
  runId: string;
  launch: number;
  chunk: number;
  from: number;
  to: number;
}

export type Ending = 'completed' | 'cancelled' | 'error';

/**
 * The engine: three idempotent steps over state kept in the database, so that any process may take any
 * step, any number of times: `prepareRun` (layout, launches, chunks), `runChunk` (score positions not
 * stored yet) and `finalizeRun` (aggregate and end). Executors (in-process with leases, or BullMQ) decide
 * who runs which step when.
 */
export class Engine {
  private readonly states = new PromiseCache<string, RunState>();
  readonly scorers: ScorerPool;
  private readonly chunkDeps: EngineDeps & { scorers: ScorerPool };

  constructor(private readonly deps: EngineDeps) {
    this.scorers = new ScorerPool(deps.scorerIdleMs);
    this.chunkDeps = { ...deps, scorers: this.scorers };
  }

  /**
   * Fixes the run's layout, launches (with their call ids) and chunks, then moves it to `running`.
   * Returns the chunks, or null when the run is not to be executed (ended, cancelled, gone).
   */
  async prepareRun(runId: string): Promise<ChunkRef[] | null> {
    const { db } = this.deps;
    const run = await loadRun(db, runId);
    if (!run || !LIVE.includes(run.status)) return null;
    if (run.cancelRequested && run.status === 'queued') {
      await transitions.cancelQueued(db, runId);
      return null;
    }
    const { plan } = run;
    if (!plan) return null;
    let lay = run.layout;
    if (!lay) {
      const count = (side: PlannedSide) => (isGenerated(side) ? 0 : this.deps.countItems(side));
      const counts = {
        sample: await count(plan.sides.sample),
        ground_truth: await count(plan.sides.ground_truth),
      };
      await transitions.fixLayout(db, runId, layOut(plan, counts));
      lay = (await loadRun(db, runId))?.layout ?? null;
      if (!lay) return null;
    }
    await chunks.insertLaunches(
      db,
      plan.launches.map((l) => ({
        run_id: runId,
        launch_index: l.index,
        model: l.model,
        call_id: newId('job'),
      })),
    );
    const refs = chunksOf(runId, lay.positions, plan.launches.length, this.deps.chunkSize);
    const now = nowIso();
    await chunks.insertChunks(
      db,
      refs.map(
        (c): RunChunkTable => ({
          run_id: runId,
          launch_index: c.launch,
          chunk_index: c.chunk,
          from_position: c.from,
          to_position: c.to,
          environment: run.environment,
          status: 'pending',
          owner: null,
          lease_expires_at: null,
          attempts: 0,
          updated_at: now,
        }),
      ),
    );
    // Running only once every chunk exists: a run with no pending chunk is one that is finished.
    await transitions.startRun(db, runId, {
      startedAt: run.startedAt,
      totalPositions: lay.positions * plan.launches.length * plan.evaluators.length,
      processId: this.deps.workerId,
    });
    return refs;
  }

  private state(runId: string): Promise<RunState> {
    return this.states.get(runId, async () => {
      const run = await loadRun(this.deps.db, runId);
      if (!run?.plan || !run.layout) throw new Error(`run ${runId} is not prepared`);
      return new RunState(this.deps, runId, run.plan, run.layout, run.abandoned);
    });
  }

  /** Scores the chunk's positions that are not stored yet. Throws the signal's reason when aborted. */
  async runChunk(ref: ChunkRef, signal: AbortSignal): Promise<void> {
    const run = await runFlags(this.deps.db, ref.runId);
    if (run?.status !== 'running') return;
    if (run.cancel_requested === 1) throw new RunCancelled(ref.runId);
    const state = await this.state(ref.runId);
    if (run.abandoned && !state.abandoned) state.abandoned = parseJson(run.abandoned, null);
    const launch = state.plan.launches[ref.launch];
    if (!launch) return;
    this.deps.metrics.chunksInFlight(1);
    try {
      const work = new ChunkWork(this.chunkDeps, state, launch, ref.from, ref.to, signal);
      const stored = await work.run();
      this.deps.metrics.positionsScored(stored);
    } finally {
      this.deps.metrics.chunksInFlight(-1);
      // What the chunk's calls cost is stored before the chunk counts as done.
      await state.ledger.flush();
    }
  }

  /**
   * Gives up on a chunk that failed `attempts` times (the executor then marks it failed): its positions
   * without a row get an error row naming the last failure, so that a monitor's selected calls are all
   * accounted for and a run's results count them.
   */
  async giveUpChunk(ref: ChunkRef, attempts: number, err: unknown): Promise<void> {
    const state = await this.state(ref.runId);
    const launch = state.plan.launches[ref.launch];
    if (!launch) return;
    const reason = err instanceof Error ? err.message : String(err);
    const error = { code: 'chunk_failed', message: `Scoring failed ${attempts} times: ${reason}` };
    const work = new ChunkWork(this.chunkDeps, state, launch, ref.from, ref.to, new AbortController().signal);
    this.deps.metrics.positionsScored(await work.giveUp(error));
  }

  /**
   * Aggregates the stored rows and ends the run: `cancelled` when asked, `error` when the run gave up
   * (rate limits) or chunks could not be executed, else `completed`. Only the first caller ends it.
   */
  async finalizeRun(runId: string): Promise<Ending | null> {
    const { db } = this.deps;
    const run = await loadRun(db, runId);
    if (!run || !LIVE.includes(run.status)) {
      await this.forget(runId);
      return null;
    }
    const { plan, layout: lay } = run;
    if (!plan || !lay) return null;
    const cached = this.states.peek(runId);
    if (cached) await (await cached.catch(() => null))?.ledger.flush();
    const pending = await chunks.countUnfinishedChunks(db, runId);
    let ending: Ending = 'completed';
    let error: RunError | null = null;
    if (run.cancelRequested) ending = 'cancelled';
    else if (run.abandoned) [ending, error] = ['error', run.abandoned];
    else if (pending > 0) {
      ending = 'error';
      error = { code: 'internal_error', message: `${pending} chunk(s) of the run could not be executed` };
    }
    const callIds = await chunks.launchCallIds(db, runId);
    const launches: LaunchOutcome[] = plan.launches.map((l) => ({
      index: l.index,
      expected: lay.expected,
      positions: lay.positions,
      callId: callIds.get(l.index) ?? null,
    }));
    const results = await aggregate(db, runId, plan, launches, ending);
    const fresh = await findRunCounters(db, runId);
    const endedAt = nowIso();
    const outcome = {
      results,
      metrics: runMetrics(fresh ?? null, lay, run.startedAt, endedAt),
      spend: fresh ? fresh.judge_cost + fresh.generation_cost : 0,
      endedAt,
    };
    const ended =
      ending === 'error'
        ? await transitions.failRun(
            db,
            runId,
            error ?? { code: 'internal_error', message: 'run failed' },
            outcome,
          )
        : await transitions.finishRun(db, runId, ending, outcome);
    await this.forget(runId);
    return ended ? ending : null;
  }

  /**
   * Records a chunk done by `owner` and answers what comes next: `finalize` when no chunk of the run is
   * pending any more (the caller finalizes, or leaves it to its finalize job), `continue` while others
   * are, `nothing` when the run has ended or is gone (what this process held for it is dropped).
   */
  async completeChunk(ref: ChunkRef, owner: string): Promise<'continue' | 'finalize' | 'nothing'> {
    await chunks.markChunkDone(this.deps.db, ref, owner);
    const run = await chunks.pendingOf(this.deps.db, ref.runId);
    if (!run || !(LIVE as readonly string[]).includes(run.status)) {
      await this.forget(ref.runId);
      return 'nothing';
    }
    // A monitor's run takes new chunks as long as its monitor lives: it is ended by the monitor, not here.
    return !run.pending && !run.monitor ? 'finalize' : 'continue';
  }

  /** Fails a run that cannot be executed at all (e.g. a scorer that cannot be set up). */
  async failRun(runId: string, err: ScorerSetupError): Promise<void> {
    await transitions.abandonRun(this.deps.db, runId, { code: err.code, message: err.message });
  }

  /** Drops what this process holds for the run: its cached state (ledger flushed) and its scorers. */
  async forget(runId: string): Promise<void> {
    const state = this.states.peek(runId);
    this.states.delete(runId);
    await (await state?.catch(() => null))?.close();
    await this.scorers.endRun(runId);
  }

  async close(): Promise<void> {
    await Promise.all(this.states.keys().map((id) => this.forget(id)));
    await this.scorers.close();
  }
}

/** The chunks of a run: launches interleaved chunk by chunk, so they progress together. */
export function chunksOf(runId: string, positions: number, launches: number, size: number): ChunkRef[] {
  const out: ChunkRef[] = [];
  for (let chunk = 0, from = 0; from < positions; chunk++, from += size) {
    for (let launch = 0; launch < launches; launch++) {
      out.push({ runId, launch, chunk, from, to: Math.min(from + size, positions) });
    }
  }
  return out;
}
