import type { Kysely } from 'kysely';
import type { Database, RunChunkTable } from '../db/schema.js';
import type { EngineMetrics } from '../observability/types.js';
import type { Scorer, ScorerSetupError } from '../scoring/types.js';
import { newId, nowIso } from '../shared/ids.js';
import { parseJson } from '../shared/json.js';
import { aggregate, type LaunchOutcome } from './aggregate.js';
import { ChunkWork } from './chunk.js';
import { RunCancelled } from './errors.js';
import type { EvaluatorSnapshot, Layout, PlannedSide, RunPlan } from './plan.js';
import { layout as layOut } from './plan.js';
import type { ItemReader } from './positions.js';
import { runMetrics } from './progress.js';
import { type CallDeps, RunState } from './run-state.js';
import { ScorerPool } from './scorer-pool.js';
import * as store from './store.js';

/** Everything execution needs, as a plain object of functions (built once by the composition root). */
export interface EngineDeps extends CallDeps {
  db: Kysely<Database>;
  readItems: ItemReader;
  countItems(side: PlannedSide): Promise<number>;
  createCodeScorer(evaluator: EvaluatorSnapshot): Promise<Scorer>;
  sandbox(): Promise<{ available: boolean; reason?: string }>;
  metrics: EngineMetrics;
  /** Positions per chunk. */
  chunkSize: number;
  /** An unused scorer is closed after this long. */
  scorerIdleMs: number;
  /** This process, recorded as the run's `process_id` by the process that prepares it. */
  workerId: string;
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
  private readonly states = new Map<string, Promise<RunState>>();
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
    const run = await store.findRun(db, runId);
    if (!run || !['queued', 'running'].includes(run.status)) return null;
    if (run.cancel_requested === 1 && run.status === 'queued') {
      const now = nowIso();
      await store.transitionRun(db, runId, ['queued'], {
        status: 'cancelled',
        finished_at: now,
        updated_at: now,
      });
      return null;
    }
    const plan = parseJson<RunPlan | null>(run.plan, null);
    if (!plan) return null;
    let lay = parseJson<Layout | null>(run.layout, null);
    if (!lay) {
      const count = (side: PlannedSide) => (side.type === 'generate' ? 0 : this.deps.countItems(side));
      const counts = {
        sample: await count(plan.sides.sample),
        ground_truth: await count(plan.sides.ground_truth),
      };
      // The first writer's layout wins: sources that grow (task logs) must not give two layouts.
      await db
        .updateTable('runs')
        .set({ layout: JSON.stringify(layOut(plan, counts)) })
        .where('id', '=', runId)
        .where('layout', 'is', null)
        .execute();
      lay = parseJson<Layout | null>((await store.findRun(db, runId))?.layout ?? null, null);
      if (!lay) return null;
    }
    await store.insertLaunches(
      db,
      plan.launches.map((l) => ({
        run_id: runId,
        launch_index: l.index,
        model: l.model,
        call_id: newId('job'),
      })),
    );
    const chunks = chunksOf(runId, lay.positions, plan.launches.length, this.deps.chunkSize);
    const now = nowIso();
    await store.insertChunks(
      db,
      chunks.map(
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
    await store.transitionRun(db, runId, ['queued'], {
      status: 'running',
      started_at: run.started_at ?? now,
      total_positions: lay.positions * plan.launches.length * plan.evaluators.length,
      process_id: this.deps.workerId,
      updated_at: now,
    });
    return chunks;
  }

  private state(runId: string): Promise<RunState> {
    let state = this.states.get(runId);
    if (!state) {
      state = (async () => {
        const run = await store.findRun(this.deps.db, runId);
        const plan = parseJson<RunPlan | null>(run?.plan ?? null, null);
        const lay = parseJson<Layout | null>(run?.layout ?? null, null);
        if (!run || !plan || !lay) throw new Error(`run ${runId} is not prepared`);
        return new RunState(this.deps, runId, plan, lay, run.abandoned);
      })();
      state.catch(() => this.states.delete(runId));
      this.states.set(runId, state);
    }
    return state;
  }

  /** Scores the chunk's positions that are not stored yet. Throws the signal's reason when aborted. */
  async runChunk(ref: ChunkRef, signal: AbortSignal): Promise<void> {
    const run = await store.runFlags(this.deps.db, ref.runId);
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
   * Aggregates the stored rows and ends the run: `cancelled` when asked, `error` when the run gave up
   * (rate limits) or chunks could not be executed, else `completed`. Only the first caller ends it.
   */
  async finalizeRun(runId: string): Promise<Ending | null> {
    const { db } = this.deps;
    const run = await store.findRun(db, runId);
    if (!run || !['queued', 'running'].includes(run.status)) {
      await this.forget(runId);
      return null;
    }
    const plan = parseJson<RunPlan | null>(run.plan, null);
    const lay = parseJson<Layout | null>(run.layout, null);
    if (!plan || !lay) return null;
    const cached = this.states.get(runId);
    if (cached) await (await cached.catch(() => null))?.ledger.flush();
    const pending = await store.countUnfinishedChunks(db, runId);
    const abandoned = parseJson<{ code: string; message: string } | null>(run.abandoned, null);
    let ending: Ending = 'completed';
    let error: { code: string; message: string } | null = null;
    if (run.cancel_requested === 1) ending = 'cancelled';
    else if (abandoned) [ending, error] = ['error', abandoned];
    else if (pending > 0) {
      ending = 'error';
      error = { code: 'internal_error', message: `${pending} chunk(s) of the run could not be executed` };
    }
    const callIds = await store.launchCallIds(db, runId);
    const launches: LaunchOutcome[] = plan.launches.map((l) => ({
      index: l.index,
      expected: lay.expected,
      positions: lay.positions,
      callId: callIds.get(l.index) ?? null,
    }));
    const results = await aggregate(db, runId, plan, launches, ending);
    const now = nowIso();
    const fresh = await store.findRunCounters(db, runId);
    const ended = await store.transitionRun(db, runId, ['queued', 'running'], {
      status: ending,
      results: JSON.stringify(results),
      metrics: JSON.stringify(runMetrics(fresh ?? null, lay, run.started_at, now)),
      spend: fresh ? fresh.judge_cost + fresh.generation_cost : 0,
      finished_at: now,
      error_at: ending === 'error' ? now : null,
      error: error ? JSON.stringify(error) : null,
      updated_at: now,
    });
    await this.forget(runId);
    return ended ? ending : null;
  }

  /** Fails a run that cannot be executed at all (e.g. a scorer that cannot be set up). */
  async failRun(runId: string, err: ScorerSetupError): Promise<void> {
    await store.updateRun(this.deps.db, runId, {
      abandoned: JSON.stringify({ code: err.code, message: err.message }),
    });
  }

  /** Drops what this process holds for the run: its cached state (ledger flushed) and its scorers. */
  async forget(runId: string): Promise<void> {
    const state = this.states.get(runId);
    this.states.delete(runId);
    await (await state?.catch(() => null))?.close();
    await this.scorers.endRun(runId);
  }

  async close(): Promise<void> {
    await Promise.all([...this.states.keys()].map((id) => this.forget(id)));
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
