import type { Kysely } from 'kysely';
import type { Item } from '../catalog/items.js';
import type { ResolvedModel } from '../catalog/models/types.js';
import type { Database, RunGenerationTable, RunSampleTable } from '../db/schema.js';
import { CallCanceller } from '../inference/cancel.js';
import type { ProviderLayer } from '../inference/provider-layer.js';
import type { CompletionResult } from '../inference/types.js';
import * as repo from '../runs/repository.js';
import { createJudgeScorer, judgeNeeds } from '../scoring/judge/scorer.js';
import { type ScoreInput, type ScoreOutcome, type Scorer, ScorerSetupError } from '../scoring/types.js';
import { newId, nowIso } from '../shared/ids.js';
import { parseJson } from '../shared/json.js';
import { aggregate, type LaunchOutcome, usageTotals } from './aggregate.js';
import type { ModelGate } from './model-gate.js';
import {
  type EvaluatorSnapshot,
  type Launch,
  type Layout,
  layout,
  type PlannedSide,
  type RunPlan,
} from './plan.js';
import { type ChunkItems, type ItemReader, isBlank, loadChunk, toMessages } from './positions.js';

/** Everything execution needs, as a plain object of functions (a production and a test factory build it). */
export interface ExecutionDeps {
  db: Kysely<Database>;
  readItems: ItemReader;
  countItems(side: PlannedSide): Promise<number>;
  resolveModel(projectId: string, slug: string): Promise<ResolvedModel>;
  providers: Pick<ProviderLayer, 'complete'>;
  createCodeScorer(evaluator: EvaluatorSnapshot): Promise<Scorer>;
  gate: ModelGate;
  /** Positions per chunk. */
  chunkSize: number;
  /** Chunks of one launch in flight at once, so a slow tail does not idle the model lanes. */
  chunksInFlight: number;
  processId: string;
}

/** The abort reason used when the process shuts down: the run is left to resume, not cancelled. */
export const SHUTDOWN = new Error('shutdown');

interface Progress {
  done: number;
  total: number;
  startedAt: number;
}

type Totals = Awaited<ReturnType<typeof usageTotals>>;

const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));

function generatedItem(
  base: Item | null,
  gen: { output: string | null } | undefined,
  model: string,
): Item | null {
  if (!gen || gen.output === null) return null;
  return {
    id: base?.id ?? '',
    input: base?.input ?? null,
    output: gen.output,
    expected: null,
    metadata: { model },
    raw: { generated_by: model, output: gen.output },
  };
}

/** `score >= pass_threshold` when a threshold is set, else the evaluator's own verdict, else unknown. */
function passedOf(ev: EvaluatorSnapshot, o: Partial<ScoreOutcome>): number | null {
  if (ev.pass_threshold !== null && typeof o.score === 'number') return o.score >= ev.pass_threshold ? 1 : 0;
  return o.passed === null || o.passed === undefined ? null : o.passed ? 1 : 0;
}

class RunExecution {
  private readonly scorers = new Map<string, Scorer>();
  private readonly models = new Map<string, Promise<ResolvedModel>>();
  /** One emitter-based canceller for every call of the run: cheaper per call than AbortSignal listeners. */
  private readonly canceller = new CallCanceller();
  private readonly progress: Progress;
  private lastFlush = 0;

  /**
   * @param resumed whether rows may already exist (a restart): only then are stored positions looked up.
   * @param usage totals so far, kept up to date in memory so progress updates cost no aggregate query.
   */
  constructor(
    private readonly deps: ExecutionDeps,
    private readonly runId: string,
    private readonly plan: RunPlan,
    private readonly layout: Layout,
    private readonly signal: AbortSignal,
    done: number,
    private readonly resumed: boolean,
    private readonly usage: Totals,
  ) {
    const total = layout.positions * plan.launches.length * plan.evaluators.length;
    this.canceller.setMaxListeners(0);
    signal.addEventListener('abort', () => this.canceller.abort(), { once: true });
    this.progress = { done, total, startedAt: Date.now() };
  }

  private async call(
    slug: string,
    request: Parameters<ProviderLayer['complete']>[1],
  ): Promise<CompletionResult> {
    // Resolved once per run: a registry look-up per call would cost a database round trip each.
    let resolved = this.models.get(slug);
    if (!resolved) {
      resolved = this.deps.resolveModel(this.plan.projectId, slug);
      resolved.catch(() => this.models.delete(slug));
      this.models.set(slug, resolved);
    }
    const model = await resolved;
    // projectId lets the model's registered fallbacks resolve.
    const options = { signal: this.canceller, projectId: this.plan.projectId };
    return this.deps.gate.run(slug, () => this.deps.providers.complete(model, request, options), this.signal);
  }

  private async scorer(ev: EvaluatorSnapshot, launch: number): Promise<Scorer> {
    const key = `${ev.id}:${launch}`;
    let s = this.scorers.get(key);
    if (!s) {
      s =
        ev.type === 'code'
          ? await this.deps.createCodeScorer(ev)
          : createJudgeScorer(ev, (request) => this.call(ev.model ?? '', request));
      this.scorers.set(key, s);
    }
    return s;
  }

  /** Generates (once) the completions of a generate side for positions [from, to). */
  private async generate(
    launch: number,
    side: 'sample' | 'ground_truth' | 'baseline',
    model: string,
    inputs: (Item | null)[],
    from: number,
  ): Promise<Map<number, { output: string | null }>> {
    const to = from + inputs.length;
    const stored = this.resumed
      ? await repo.storedGenerations(this.deps.db, this.runId, launch, side, from, to)
      : new Map<number, RunGenerationTable>();
    const fresh: RunGenerationTable[] = [];
    await Promise.all(
      inputs.map(async (item, i) => {
        const position = from + i;
        if (stored.has(position) || item === null) return;
        const row: RunGenerationTable = {
          run_id: this.runId,
          launch_index: launch,
          side,
          position,
          model,
          output: null,
          error: null,
          usage: null,
          cost: 0,
          prompt_tokens: 0,
          completion_tokens: 0,
          latency_ms: null,
          created_at: nowIso(),
        };
        try {
          // The model's registry default_parameters are applied by the provider layer.
          const messages = toMessages(item.input);
          const result = await this.call(model, { model, messages, stream: false });
          row.output = result.text;
          row.usage = json(result.usage);
          row.cost = result.cost;
          row.prompt_tokens = result.usage?.prompt_tokens ?? 0;
          row.completion_tokens = result.usage?.completion_tokens ?? 0;
          row.latency_ms = result.latencyMs;
        } catch (err) {
          if (this.signal.aborted) throw err;
          const e = err as { code?: string; message?: string };
          row.error = JSON.stringify({
            code: e.code ?? 'generation_failed',
            message: e.message ?? 'generation failed',
          });
        }
        fresh.push(row);
      }),
    );
    await repo.insertGenerations(this.deps.db, fresh);
    for (const r of fresh) this.tally(this.usage.generation, 1, r);
    const outputs = new Map<number, { output: string | null }>();
    for (const r of [...stored.values(), ...fresh])
      outputs.set(r.position, { output: r.error ? null : r.output });
    return outputs;
  }

  private missingFor(ev: EvaluatorSnapshot, input: ScoreInput): boolean {
    if (ev.type === 'code') return input.sample === null && input.groundTruth === null;
    const needs = judgeNeeds(ev);
    if (input.sample === null || isBlank(input.sample.output)) return true;
    if (needs.expected && isBlank(input.groundTruth?.expected ?? input.sample.expected)) return true;
    return needs.baseline && (input.baseline === null || isBlank(input.baseline.output));
  }

  private async chunk(launch: Launch, from: number, to: number): Promise<void> {
    const { db } = this.deps;
    const done = this.resumed
      ? await repo.donePositions(db, this.runId, launch.index, from, to)
      : new Set<string>();
    if (done.size >= (to - from) * this.plan.evaluators.length) return;
    const items: ChunkItems = await loadChunk(this.plan, this.layout, this.deps.readItems, from, to);
    const generationFailed = new Set<number>();
    if (this.plan.generated !== null && launch.model !== null) {
      const source = this.plan.generated === 'sample' ? items.ground_truth : items.sample;
      const gens = await this.generate(launch.index, this.plan.generated, launch.model, source, from);
      items[this.plan.generated] = source.map((base, i) => {
        const gen = gens.get(from + i);
        if (base !== null && (!gen || gen.output === null)) generationFailed.add(from + i);
        return generatedItem(base, gen, launch.model ?? '');
      });
    }
    const baselineSide = this.plan.sides.baseline;
    if (baselineSide?.type === 'generate' && baselineSide.models[0]) {
      const inputs = items.sample.map((s, i) => s ?? items.ground_truth[i] ?? null);
      const gens = await this.generate(0, 'baseline', baselineSide.models[0], inputs, from);
      items.baseline = inputs.map((base, i) =>
        generatedItem(base, gens.get(from + i), baselineSide.models[0] ?? ''),
      );
    }

    const rows: RunSampleTable[] = [];
    await Promise.all(
      this.plan.evaluators.map(async (ev) => {
        const pending: ScoreInput[] = [];
        for (let p = from; p < to; p++) {
          if (done.has(`${ev.id}:${p}`)) continue;
          const i = p - from;
          const input: ScoreInput = {
            position: p,
            sample: items.sample[i] ?? null,
            groundTruth: items.ground_truth[i] ?? null,
            baseline: items.baseline[i] ?? null,
          };
          if (generationFailed.has(p)) {
            rows.push(
              this.row(launch.index, ev, input, 'error', {
                error: {
                  code: 'generation_failed',
                  message: 'The model did not generate an output for this position',
                },
              }),
            );
          } else if (this.missingFor(ev, input)) {
            rows.push(this.row(launch.index, ev, input, 'missing', {}));
          } else {
            pending.push(input);
          }
        }
        if (pending.length === 0) return;
        const scorer = await this.scorer(ev, launch.index);
        const outcomes = await scorer.scoreBatch(pending, this.signal);
        outcomes.forEach((o, k) => {
          const input = pending[k]!;
          rows.push(this.row(launch.index, ev, input, o.error ? 'error' : 'scored', o));
        });
      }),
    );
    await repo.insertSamples(db, rows);
    for (const r of rows) this.tally(this.usage.judge, r.calls, r);
    this.progress.done += rows.length;
    await this.flushProgress(false);
  }

  private row(
    launch: number,
    ev: EvaluatorSnapshot,
    input: ScoreInput,
    status: 'scored' | 'error' | 'missing',
    o: Partial<ScoreOutcome>,
  ): RunSampleTable {
    const s = input.sample;
    const g = input.groundTruth;
    const extra = o.extra ?? null;
    return {
      run_id: this.runId,
      launch_index: launch,
      evaluator_id: ev.id,
      position: input.position,
      item_id: s?.id ?? g?.id ?? null,
      status,
      score: status === 'scored' ? (o.score ?? null) : null,
      passed: status === 'scored' ? passedOf(ev, o) : null,
      reasoning: o.reason ?? null,
      error: json(o.error ?? null),
      logs: o.logs ?? null,
      input: json(s?.input ?? g?.input ?? null),
      output: json(s?.output ?? null),
      expected: json(g?.expected ?? s?.expected ?? null),
      baseline: json(input.baseline?.output ?? null),
      usage: json(o.usage ?? null),
      cost: o.cost ?? 0,
      prompt_tokens: o.usage?.prompt_tokens ?? 0,
      completion_tokens: o.usage?.completion_tokens ?? 0,
      calls: Number((extra as { calls?: unknown } | null)?.calls ?? 0),
      inconsistent: extra && 'inconsistent' in extra ? (extra.inconsistent ? 1 : 0) : null,
      latency_ms: o.latencyMs ?? null,
      extra: json(extra),
      created_at: nowIso(),
    };
  }

  private tally(
    into: Record<string, number>,
    calls: number,
    r: { cost: number; prompt_tokens: number; completion_tokens: number },
  ): void {
    into.calls = (into.calls ?? 0) + calls;
    into.cost = (into.cost ?? 0) + r.cost;
    into.prompt_tokens = (into.prompt_tokens ?? 0) + r.prompt_tokens;
    into.completion_tokens = (into.completion_tokens ?? 0) + r.completion_tokens;
  }

  async flushProgress(force: boolean): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastFlush < 1000) return;
    this.lastFlush = now;
    await repo.updateRun(this.deps.db, this.runId, {
      metrics: JSON.stringify(this.metrics(this.usage)),
      spend: (this.usage.judge.cost ?? 0) + (this.usage.generation.cost ?? 0),
      updated_at: nowIso(),
    });
  }

  metrics(usage: Totals): Record<string, unknown> {
    return {
      progress: { done: this.progress.done, total: this.progress.total },
      duration_ms: Date.now() - this.progress.startedAt,
      positions: this.layout.positions,
      expected_positions: this.layout.expected,
      judge: usage.judge,
      generation: usage.generation,
      calls: (usage.judge.calls ?? 0) + (usage.generation.calls ?? 0),
      tokens: {
        prompt: (usage.judge.prompt_tokens ?? 0) + (usage.generation.prompt_tokens ?? 0),
        completion: (usage.judge.completion_tokens ?? 0) + (usage.generation.completion_tokens ?? 0),
      },
    };
  }

  async launch(launch: Launch): Promise<void> {
    const size = this.deps.chunkSize;
    const starts: number[] = [];
    for (let p = 0; p < this.layout.positions; p += size) starts.push(p);
    let next = 0;
    const worker = async () => {
      while (next < starts.length) {
        if (this.signal.aborted) throw this.signal.reason;
        const from = starts[next++]!;
        if (await repo.cancelRequested(this.deps.db, this.runId)) throw new Error('cancelled');
        await this.chunk(launch, from, Math.min(from + size, this.layout.positions));
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.deps.chunksInFlight) }, worker));
  }

  async close(): Promise<void> {
    await Promise.all([...this.scorers.values()].map((s) => s.close().catch(() => {})));
  }
}

async function finish(
  deps: ExecutionDeps,
  runId: string,
  plan: RunPlan,
  lay: Layout,
  callIds: (string | null)[],
  ending: 'completed' | 'cancelled' | 'error',
  execution: RunExecution,
  error: { code: string; message: string } | null,
): Promise<void> {
  const launches: LaunchOutcome[] = plan.launches.map((l) => ({
    index: l.index,
    expected: lay.expected,
    positions: lay.positions,
    callId: callIds[l.index] ?? null,
  }));
  const results = await aggregate(deps.db, runId, plan, launches, ending);
  const usage = await usageTotals(deps.db, runId);
  const now = nowIso();
  await repo.transitionRun(deps.db, runId, ['queued', 'running'], {
    status: ending,
    results: JSON.stringify(results),
    metrics: JSON.stringify(execution.metrics(usage)),
    spend: (usage.judge.cost ?? 0) + (usage.generation.cost ?? 0),
    finished_at: now,
    error_at: ending === 'error' ? now : null,
    error: error ? JSON.stringify(error) : null,
    updated_at: now,
  });
}

/**
 * Executes a run to a terminal state, resuming from whatever per-sample rows already exist. A shutdown
 * abort leaves the run `running` so the next start resumes it.
 */
export async function executeRun(deps: ExecutionDeps, runId: string, signal: AbortSignal): Promise<void> {
  const row = await repo.findRunById(deps.db, runId);
  if (!row || !['queued', 'running'].includes(row.status)) return;
  const plan = parseJson<RunPlan | null>(row.plan, null);
  if (!plan) return;
  const startedAt = row.started_at ?? nowIso();
  await repo.transitionRun(deps.db, runId, ['queued', 'running'], {
    status: 'running',
    started_at: startedAt,
    process_id: deps.processId,
    updated_at: nowIso(),
  });
  const counts = {
    sample: plan.sides.sample.type === 'generate' ? 0 : await deps.countItems(plan.sides.sample),
    ground_truth:
      plan.sides.ground_truth.type === 'generate' ? 0 : await deps.countItems(plan.sides.ground_truth),
  };
  const lay = layout(plan, counts);
  const usage = await usageTotals(deps.db, runId);
  const done = await repo.countSamples(deps.db, runId);
  const resumed = done > 0 || (usage.generation.calls ?? 0) > 0;
  const execution = new RunExecution(deps, runId, plan, lay, signal, done, resumed, usage);
  const callIds: (string | null)[] = [];
  try {
    for (const launch of plan.launches) {
      callIds[launch.index] = newId('job');
      await execution.launch(launch);
    }
    await finish(deps, runId, plan, lay, callIds, 'completed', execution, null);
  } catch (err) {
    if (signal.aborted && signal.reason === SHUTDOWN) return;
    if (signal.aborted || (err instanceof Error && err.message === 'cancelled')) {
      await finish(deps, runId, plan, lay, callIds, 'cancelled', execution, null);
      return;
    }
    const error =
      err instanceof ScorerSetupError
        ? { code: err.code, message: err.message }
        : { code: 'internal_error', message: 'The run failed unexpectedly' };
    await finish(deps, runId, plan, lay, callIds, 'error', execution, error);
    if (!(err instanceof ScorerSetupError)) throw err;
  } finally {
    await execution.close();
  }
}
