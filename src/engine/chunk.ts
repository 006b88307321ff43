import { setMaxListeners } from 'node:events';
import type { Item } from '../catalog/items.js';
import type { RunGenerationTable, RunSampleTable } from '../db/schema.js';
import type { ChatRequest } from '../llm/types.js';
import {
  outcomeOf,
  type ScoreInput,
  type ScoreOutcome,
  type Scorer,
  ScorerSetupError,
} from '../scoring/types.js';
import { type ErrorBody, errorOf } from '../shared/errors.js';
import { nowIso } from '../shared/ids.js';
import { conversationRow } from './conversation.js';
import { isStop } from './errors.js';
import type { EvaluatorSnapshot, Launch, RunPlan } from './plan.js';
import { isGenerated } from './plan.js';
import {
  type ChunkItems,
  type Generation,
  type GenerationOf,
  type ItemReader,
  loadChunk,
} from './positions.js';
import type { RunState } from './run-state.js';
import type { ScorerPool } from './scorer-pool.js';
import type { ScorerPorts, ScorerRegistry } from './scorers/registry.js';
import * as store from './store/samples.js';

export interface ChunkDeps {
  db: import('kysely').Kysely<import('../db/schema.js').Database>;
  readItems: ItemReader;
  /** How a generate side builds its requests (its source kind's). */
  generation: GenerationOf;
  /**
   * Whether the ground-truth side is no reference for the sample (its source kind's rule: task logs
   * scored against themselves): scorers are then given no ground truth.
   */
  noReference(sides: RunPlan['sides']): boolean;
  scorers: ScorerPool;
  /** The app's scorer kinds: each evaluator's scorer, and why a position is missing or an error. */
  scorerKinds: ScorerRegistry;
  createCodeScorer(evaluator: EvaluatorSnapshot): Promise<Scorer>;
  /** Whether code evaluators can run in this process (a sandbox, or the operator's opt-out). */
  sandbox(): Promise<{ available: boolean; reason?: string }>;
  /** Told of each chunk's rows once stored (the telemetry export); must not throw or wait. */
  onScored?(plan: RunPlan, rows: readonly RunSampleTable[]): void;
}

const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));

function generatedItem(
  base: Item | null,
  gen: { output: string | null } | undefined,
  model: string,
  generation: Generation,
) {
  if (!gen || gen.output === null) return null;
  const item: Item = {
    id: base?.id ?? '',
    input: base?.input ?? null,
    // What the side's kind makes of its kept answer (the text, or an eval run's whole chat completion).
    output: generation.output(gen.output),
    expected: null,
    metadata: { model },
    raw: { generated_by: model, output: gen.output },
  };
  if (base?.evalItem) item.evalItem = base.evalItem;
  const session = generation.session?.(gen.output);
  if (session) {
    item.session = session.values;
    if (session.id) item.id = session.id;
  }
  return item;
}

/** `score >= pass_threshold` when a threshold is set, else the evaluator's own verdict, else unknown. */
function passedOf(ev: EvaluatorSnapshot, o: Partial<ScoreOutcome>): number | null {
  if (ev.pass_threshold !== null && typeof o.score === 'number') return o.score >= ev.pass_threshold ? 1 : 0;
  return o.passed === null || o.passed === undefined ? null : o.passed ? 1 : 0;
}

/** A sample's error: whatever failed it, as its own code and message. */
const sampleError = (err: unknown): ErrorBody => errorOf(err, { code: 'internal_error', message: 'failed' });

/** One chunk of one launch: positions [from, to). Idempotent: what is already stored is skipped. */
export class ChunkWork {
  constructor(
    private readonly deps: ChunkDeps,
    private readonly state: RunState,
    private readonly launch: Launch,
    private readonly from: number,
    private readonly to: number,
    private readonly parent: AbortSignal,
  ) {
    // A signal of its own, aborted with the parent's, listened to by every call of the chunk.
    setMaxListeners(0, this.controller.signal);
    this.signal = this.controller.signal;
  }

  private readonly controller = new AbortController();
  private readonly signal: AbortSignal;

  private get runId() {
    return this.state.runId;
  }

  /** Generates (once) the completions of a generate side for the chunk's positions. */
  private async generate(
    side: 'sample' | 'ground_truth' | 'baseline',
    launch: number,
    model: string,
    inputs: (Item | null)[],
    generation: Generation,
  ): Promise<Map<number, { output: string | null; error: string | null }>> {
    const { from } = this;
    const stored = await store.storedGenerations(this.deps.db, this.runId, launch, side, from, this.to);
    const fresh: RunGenerationTable[] = [];
    /** Conversations, stored as each one ends (with their sessions), not with the chunk's rows. */
    const conversed: RunGenerationTable[] = [];
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
          if (generation.converse) {
            const { projectId, containerId } = this.state.plan;
            const place = { runId: this.runId, projectId, containerId, launch, side, position, model };
            const call = (m: string, r: ChatRequest) => this.state.call('generation', m, r, this.signal);
            conversed.push(await conversationRow(this.deps.db, call, place, generation, item));
            return;
          }
          // The model's registry default_parameters are applied by the provider layer.
          const body = generation.request(item, model, launch);
          const result = await this.state.call('generation', model, body, this.signal);
          row.output = generation.keep(result);
          row.usage = json(result.usage);
          row.cost = result.cost;
          row.prompt_tokens = result.usage?.prompt_tokens ?? 0;
          row.completion_tokens = result.usage?.completion_tokens ?? 0;
          row.latency_ms = result.latencyMs;
        } catch (err) {
          if (this.signal.aborted || isStop(err)) throw this.signal.aborted ? this.signal.reason : err;
          row.error = JSON.stringify(sampleError(err));
        }
        fresh.push(row);
      }),
    );
    await store.insertGenerations(this.deps.db, fresh);
    const outputs = new Map<number, { output: string | null; error: string | null }>();
    for (const r of [...stored.values(), ...conversed, ...fresh]) {
      outputs.set(Number(r.position), { output: r.error ? null : r.output, error: r.error });
    }
    return outputs;
  }

  /** The items of every side for the chunk, generated sides included. */
  private async items(): Promise<{
    items: ChunkItems;
    failed: Map<number, ErrorBody>;
  }> {
    const { plan, layout } = this.state;
    const { from, to, launch } = this;
    const items = await loadChunk(plan, layout, this.deps.readItems, from, to);
    const failed = new Map<number, ErrorBody>();
    if (plan.generated !== null && launch.model !== null) {
      const source = plan.generated === 'sample' ? items.ground_truth : items.sample;
      const genSide = plan.sides[plan.generated];
      if (!isGenerated(genSide)) throw new Error(`the ${plan.generated} side is not generated`);
      const generation = this.deps.generation(genSide);
      const gens = await this.generate(plan.generated, launch.index, launch.model, source, generation);
      items[plan.generated] = source.map((base, i) => {
        const gen = gens.get(from + i);
        if (base !== null && (!gen || gen.output === null)) {
          const cause = gen?.error ? (JSON.parse(gen.error) as { code?: string }) : null;
          failed.set(
            from + i,
            cause?.code === 'template_error'
              ? { code: 'template_error', message: String((cause as { message?: unknown }).message) }
              : cause?.code === 'rate_limited'
                ? { code: 'rate_limited', message: 'The generation model kept answering 429' }
                : {
                    code: 'generation_failed',
                    message: 'The model did not generate an output for this position',
                  },
          );
        }
        return generatedItem(base, gen, launch.model ?? '', generation);
      });
    }
    const baselineSide = plan.sides.baseline;
    if (baselineSide && isGenerated(baselineSide) && baselineSide.models[0]) {
      const inputs = items.sample.map((s, i) => s ?? items.ground_truth[i] ?? null);
      const generation = this.deps.generation(baselineSide);
      const gens = await this.generate('baseline', 0, baselineSide.models[0], inputs, generation);
      items.baseline = inputs.map((base, i) =>
        generatedItem(base, gens.get(from + i), baselineSide.models[0] ?? '', generation),
      );
    }
    return { items, failed };
  }

  private scorer(
    ev: EvaluatorSnapshot,
  ): (run: (s: Scorer) => Promise<ScoreOutcome[]>) => Promise<ScoreOutcome[]> {
    const key = `${this.runId}:${ev.id}:${this.launch.index}`;
    const ports: ScorerPorts = {
      complete: (model, request, signal) => this.state.call('judge', model, request, signal),
      embed: (model, input, signal) => this.state.embed(model, input, signal),
      createCodeScorer: (evaluator) => this.deps.createCodeScorer(evaluator),
      sandbox: () => this.deps.sandbox(),
    };
    const create = (): Promise<Scorer> => this.deps.scorerKinds.createScorer(ev, ports);
    return (run) => this.deps.scorers.use(this.runId, key, create, run);
  }

  /**
   * Scores every position of the chunk not stored yet; returns the rows stored by this call. What the
   * chunk's calls cost is counted by the run's ledger as each call returns, not with the rows: a process
   * killed (or a database lost) before the rows are stored has its answered calls counted all the same,
   * so the run's spend is what the provider answered, calls asked again included.
   */
  async run(): Promise<number> {
    const abort = () => this.controller.abort(this.parent.reason);
    if (this.parent.aborted) abort();
    else this.parent.addEventListener('abort', abort, { once: true });
    try {
      return await this.score();
    } finally {
      this.parent.removeEventListener('abort', abort);
    }
  }

  private async score(): Promise<number> {
    const { plan } = this.state;
    const { db } = this.deps;
    const done = await store.donePositions(db, this.runId, this.launch.index, this.from, this.to);
    if (done.size >= (this.to - this.from) * plan.evaluators.length) return 0;
    const abandoned = this.state.abandoned;
    const { items, failed } = abandoned
      ? {
          items: await loadChunk(plan, this.state.layout, this.deps.readItems, this.from, this.to),
          failed: new Map(),
        }
      : await this.items();
    const rows: RunSampleTable[] = [];
    const noTruth = this.deps.noReference(plan.sides);
    await Promise.all(
      plan.evaluators.map(async (ev) => {
        const pending: ScoreInput[] = [];
        for (let p = this.from; p < this.to; p++) {
          if (done.has(`${ev.id}:${p}`)) continue;
          const i = p - this.from;
          const input: ScoreInput = {
            position: p,
            sample: items.sample[i] ?? null,
            groundTruth: noTruth ? null : (items.ground_truth[i] ?? null),
            baseline: items.baseline[i] ?? null,
          };
          const failure = failed.get(p) ?? this.deps.scorerKinds.errorReason(ev, input);
          const missing = failure ? null : this.deps.scorerKinds.missingReason(ev, input);
          if (failure) rows.push(this.row(ev, input, 'error', { error: failure }));
          else if (missing !== null) rows.push(this.row(ev, input, 'missing', {}, missing));
          else if (abandoned) rows.push(this.row(ev, input, 'error', { error: abandoned }));
          else pending.push(input);
        }
        if (pending.length === 0) return;
        let outcomes: ScoreOutcome[];
        try {
          outcomes = await this.scorer(ev)((scorer) => scorer.scoreBatch(pending, this.signal));
        } catch (err) {
          if (!(err instanceof ScorerSetupError) || err.code !== 'sandbox_unavailable') throw err;
          // This worker cannot sandbox: the evaluator's positions fail here, the other evaluators go on.
          outcomes = pending.map(() => outcomeOf({ error: { code: err.code, message: err.message } }));
        }
        outcomes.forEach((o, k) => {
          // A code evaluator that could not score for want of data (no ground truth/baseline) is missing.
          const status = o.error ? (o.error.code === 'missing_data' ? 'missing' : 'error') : 'scored';
          rows.push(
            this.row(ev, pending[k]!, status, o, status === 'missing' ? (o.error?.message ?? null) : null),
          );
        });
      }),
    );
    // A call that gave up on rate limits has already marked the run abandoned (RunState.call).
    return this.store(rows);
  }

  /**
   * Gives up on a chunk that kept failing: each of its positions without a row gets an error row with
   * `error` (no item read, no call made), so that every position a run or a monitor selected is
   * accounted for. Returns the rows stored.
   */
  async giveUp(error: ErrorBody): Promise<number> {
    const { plan } = this.state;
    const done = await store.donePositions(this.deps.db, this.runId, this.launch.index, this.from, this.to);
    const rows: RunSampleTable[] = [];
    for (const ev of plan.evaluators) {
      for (let p = this.from; p < this.to; p++) {
        if (done.has(`${ev.id}:${p}`)) continue;
        const input: ScoreInput = { position: p, sample: null, groundTruth: null, baseline: null };
        rows.push(this.row(ev, input, 'error', { error }));
      }
    }
    return this.store(rows);
  }

  /** Stores the chunk's rows, stamped with one clock read, and tells the run's listener. */
  private async store(rows: RunSampleTable[]): Promise<number> {
    const at = nowIso();
    for (const r of rows) r.created_at = at;
    const stored = await store.insertSamples(this.deps.db, this.runId, rows);
    this.deps.onScored?.(this.state.plan, rows);
    return stored;
  }

  private row(
    ev: EvaluatorSnapshot,
    input: ScoreInput,
    status: 'scored' | 'error' | 'missing',
    o: Partial<ScoreOutcome>,
    missing: string | null = null,
  ): RunSampleTable {
    const s = input.sample;
    const g = input.groundTruth;
    const extra = o.extra ?? null;
    return {
      run_id: this.runId,
      launch_index: this.launch.index,
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
      missing_reason: missing,
      prompt_hash: typeof extra?.prompt_hash === 'string' ? extra.prompt_hash : null,
      created_at: '', // stamped when stored (score)
    };
  }
}
