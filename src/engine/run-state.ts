import { performance } from 'node:perf_hooks';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { ResponseCache } from '../llm/cache/cache.js';
import { createModelCaller, type ModelCaller } from '../llm/call-model.js';
import type { EmbeddingsResult } from '../llm/embeddings.js';
import type { ResolvedModel } from '../llm/models/types.js';
import type { ProviderLayer } from '../llm/provider-layer.js';
import type { ChatRequest, CompletionResult } from '../llm/types.js';
import { rateLimitRetryMs } from '../llm/upstream-errors.js';
import type { EngineMetrics } from '../observability/types.js';
import type { ModelLimiter } from '../ratelimit/model-limiter.js';
import type { SpendGuard } from '../shared/budget.js';
import { ApiError, type ErrorBody } from '../shared/errors.js';
import { PromiseCache } from '../shared/promise-cache.js';
import { isStop, RateLimitExhausted, RunAbandoned } from './errors.js';
import { type CallKind, Ledger } from './ledger.js';
import type { Layout, RunPlan } from './plan.js';
import { abandonRun } from './store/transitions.js';

export interface CallDeps {
  db: Kysely<Database>;
  resolveModel(projectId: string, slug: string): Promise<ResolvedModel>;
  providers: Pick<ProviderLayer, 'complete' | 'embed'>;
  /** The response cache, used by runs created with the `cache` option. */
  cache?: ResponseCache;
  limiter: ModelLimiter;
  metrics: EngineMetrics;
  /** Calls in flight per model, across every worker sharing the limiter. */
  modelConcurrency: number;
  /** How long a run may wait on 429s without any call succeeding before it gives up. */
  rateLimitWaitMs: number;
  ledgerFlushMs: number;
  warn(message: string): void;
  /** The project's budget: checked before each call (a run that runs out is abandoned), charged after. */
  budgets?: SpendGuard;
}

/** A run's abandonment, as stored on the run (`abandoned`). */
export type Abandonment = ErrorBody;

/**
 * What this process knows about a run it executes chunks of: the plan and layout (fixed when the run was
 * prepared), its resolved models, its ledger of paid calls. Everything here can be rebuilt from the
 * database; it is cached only to spare a look-up per call.
 */
export class RunState {
  readonly ledger: Ledger;
  private readonly models = new PromiseCache<string, ResolvedModel>();
  /** The one model call (limits, budget, cache, provider), with this process's limiter. */
  private readonly caller: ModelCaller;
  /** When a call of this run last succeeded in this process (or when the process took the run up). */
  private lastSuccessAt = Date.now();
  abandoned: Abandonment | null;

  constructor(
    private readonly deps: CallDeps,
    readonly runId: string,
    readonly plan: RunPlan,
    readonly layout: Layout,
    abandoned: Abandonment | null,
  ) {
    this.ledger = new Ledger(deps.db, runId, deps.ledgerFlushMs, deps.warn);
    this.caller = createModelCaller({
      providers: deps.providers,
      budgets: deps.budgets,
      limits: { limiter: deps.limiter, concurrency: deps.modelConcurrency },
      cache: deps.cache,
    });
    this.abandoned = abandoned;
  }

  /** Models resolved so far, with their limits, read without an await by every call after the first. */

  private model(slug: string): Promise<ResolvedModel> {
    return this.models.get(slug, () => this.deps.resolveModel(this.plan.projectId, slug));
  }

  private get payer() {
    return { projectId: this.plan.projectId, keyId: null };
  }

  /** Whether the run may still call: an abandoned run stops every call. */
  private readonly admit = (): void => {
    if (this.abandoned) throw new RunAbandoned(this.abandoned);
  };

  /**
   * Once the project's budget is spent, the run is abandoned: its remaining positions are recorded with
   * the `budget_exceeded` error, what it scored is kept.
   */
  private readonly refused = async (err: unknown): Promise<void> => {
    if (err instanceof ApiError && err.code === 'budget_exceeded') {
      await this.abandon({ code: err.code, message: err.message });
    }
  };

  /** Records that the run gives up, here and in the database, so every worker stops calling. */
  async abandon(reason: Abandonment): Promise<void> {
    if (this.abandoned) return;
    this.abandoned = reason;
    await abandonRun(this.deps.db, this.runId, reason).catch(() => {});
  }

  /**
   * One model call of the run, through the one model call (`llm/call-model.ts`): the model's limiter, the
   * project's budget (reserved, then settled), the cache when the run uses it, the provider layer (which
   * owns transport retries); what was paid is counted in the run's ledger as the call returns (written
   * within its flush interval, whatever becomes of the chunk: a chunk killed before storing its rows
   * leaves its calls counted, and the calls asked again elsewhere are counted again, as the provider
   * counts them). On a 429 the model is paused everywhere and
   * the call asked again, until the run has waited `rateLimitWaitMs` without a success.
   */
  async call(
    kind: CallKind,
    slug: string,
    request: ChatRequest,
    signal: AbortSignal,
  ): Promise<CompletionResult> {
    const sink = this.ledger;
    const model = await this.model(slug);
    const { limiter, metrics } = this.deps;
    const { cache } = this.plan;
    const priced = model.inputPricePerMtok !== null && model.outputPricePerMtok !== null;
    for (;;) {
      if (this.abandoned) throw new RunAbandoned(this.abandoned);
      const waited = Date.now() - this.lastSuccessAt;
      if (limiter.pausedFor(slug) > this.deps.rateLimitWaitMs - waited) {
        await this.abandon({ code: 'rate_limited', message: new RateLimitExhausted(slug, waited).message });
        continue;
      }
      let started = 0;
      let retryInMs: number | null = null;
      try {
        // The budget is reserved once the call may go: calls queued behind the model's limit see what
        // those before them paid. A cache hit costs nothing: the ledger counts what was paid.
        const result = await this.caller.complete(model, request, {
          payer: this.payer,
          signal,
          cache,
          admit: this.admit,
          started: () => {
            started = performance.now();
          },
          refused: this.refused,
          spent: (usage, cost) => sink.add(kind, { usage, cost, priced: priced && usage !== null }),
        });
        this.lastSuccessAt = Date.now();
        metrics.upstreamCall(slug, kind, 'ok', (performance.now() - started) / 1000);
        return result;
      } catch (err) {
        // Refused before any call (the limiter's wait cancelled, the run abandoned, the budget spent).
        if (started === 0) throw err;
        const seconds = (performance.now() - started) / 1000;
        if (signal.aborted || isStop(err)) {
          metrics.upstreamCall(slug, kind, 'cancelled', seconds);
          throw signal.aborted ? signal.reason : err;
        }
        retryInMs = rateLimitRetryMs(err);
        metrics.upstreamCall(slug, kind, retryInMs === null ? 'error' : 'rate_limited', seconds);
        if (retryInMs === null) throw err;
      }
      await limiter.pause(slug, retryInMs);
    }
  }

  /**
   * Embeddings for a grader evaluator (cosine): a paid call like a judge's, within the model's limits,
   * counted in the ledger like a judge's.
   */
  async embed(slug: string, input: string[], signal: AbortSignal): Promise<EmbeddingsResult> {
    const sink = this.ledger;
    const model = await this.model(slug);
    return this.caller.embed(model, input, {
      payer: this.payer,
      signal,
      admit: this.admit,
      refused: this.refused,
      spent: (usage, cost) =>
        sink.add('judge', { usage, cost, priced: usage !== null && model.inputPricePerMtok !== null }),
    });
  }

  async close(): Promise<void> {
    await this.ledger.close();
  }
}
