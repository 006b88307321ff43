import { performance } from 'node:perf_hooks';
import type { Kysely } from 'kysely';
import type { ResolvedModel } from '../catalog/models/types.js';
import type { Database } from '../db/schema.js';
import type { ProviderLayer } from '../inference/provider-layer.js';
import type { ChatRequest, CompletionResult } from '../inference/types.js';
import { rateLimitRetryMs } from '../inference/upstream-errors.js';
import type { EngineMetrics } from '../observability/types.js';
import { parseJson } from '../shared/json.js';
import { isStop, RateLimitExhausted } from './errors.js';
import { type CallKind, Ledger } from './ledger.js';
import type { ModelLimiter } from './limiter.js';
import type { Layout, RunPlan } from './plan.js';
import { updateRun } from './store.js';

export interface CallDeps {
  db: Kysely<Database>;
  resolveModel(projectId: string, slug: string): Promise<ResolvedModel>;
  providers: Pick<ProviderLayer, 'complete'>;
  limiter: ModelLimiter;
  metrics: EngineMetrics;
  /** Calls in flight per model, across every worker sharing the limiter. */
  modelConcurrency: number;
  /** How long a run may wait on 429s without any call succeeding before it gives up. */
  rateLimitWaitMs: number;
  ledgerFlushMs: number;
  warn(message: string): void;
}

/** A run's abandonment, as stored on the run (`abandoned`). */
export interface Abandonment {
  code: string;
  message: string;
}

/**
 * What this process knows about a run it executes chunks of: the plan and layout (fixed when the run was
 * prepared), its resolved models, its ledger of paid calls. Everything here can be rebuilt from the
 * database; it is cached only to spare a look-up per call.
 */
export class RunState {
  readonly ledger: Ledger;
  private readonly models = new Map<string, Promise<ResolvedModel>>();
  /** When a call of this run last succeeded in this process (or when the process took the run up). */
  private lastSuccessAt = Date.now();
  abandoned: Abandonment | null;

  constructor(
    private readonly deps: CallDeps,
    readonly runId: string,
    readonly plan: RunPlan,
    readonly layout: Layout,
    abandoned: string | null,
  ) {
    this.ledger = new Ledger(deps.db, runId, deps.ledgerFlushMs, deps.warn);
    this.abandoned = parseJson<Abandonment | null>(abandoned, null);
  }

  private model(slug: string): Promise<ResolvedModel> {
    let resolved = this.models.get(slug);
    if (!resolved) {
      resolved = this.deps.resolveModel(this.plan.projectId, slug);
      resolved.catch(() => this.models.delete(slug));
      this.models.set(slug, resolved);
    }
    return resolved;
  }

  /** Records that the run gives up, here and in the database, so every worker stops calling. */
  async abandon(reason: Abandonment): Promise<void> {
    if (this.abandoned) return;
    this.abandoned = reason;
    await updateRun(this.deps.db, this.runId, { abandoned: JSON.stringify(reason) }).catch(() => {});
  }

  /**
   * One model call of the run: waits for the model's limiter, calls through the provider layer (which
   * owns transport retries), counts what was paid, and on a 429 pauses the model everywhere and asks
   * again, until the run has waited `rateLimitWaitMs` without a success.
   */
  async call(
    kind: CallKind,
    slug: string,
    request: ChatRequest,
    signal: AbortSignal,
  ): Promise<CompletionResult> {
    const model = await this.model(slug);
    const limits = {
      concurrency: this.deps.modelConcurrency,
      rpm: model.limits.rpm,
      tpm: model.limits.tpm,
    };
    const { limiter, metrics } = this.deps;
    for (;;) {
      if (this.abandoned) throw new RateLimitExhausted(slug, this.deps.rateLimitWaitMs);
      const waited = Date.now() - this.lastSuccessAt;
      if (limiter.pausedFor(slug) > this.deps.rateLimitWaitMs - waited) {
        await this.abandon({ code: 'rate_limited', message: new RateLimitExhausted(slug, waited).message });
        continue;
      }
      const permit = await limiter.acquire(slug, limits, signal);
      const started = performance.now();
      let tokens = 0;
      let retryInMs: number | null = null;
      try {
        const result = await this.deps.providers.complete(model, request, {
          signal,
          projectId: this.plan.projectId,
        });
        const priced =
          result.usage !== null && model.inputPricePerMtok !== null && model.outputPricePerMtok !== null;
        this.ledger.add(kind, result.usage, result.cost, priced);
        tokens = (result.usage?.prompt_tokens ?? 0) + (result.usage?.completion_tokens ?? 0);
        this.lastSuccessAt = Date.now();
        metrics.upstreamCall(slug, kind, 'ok', (performance.now() - started) / 1000);
        return result;
      } catch (err) {
        const seconds = (performance.now() - started) / 1000;
        if (signal.aborted || isStop(err)) {
          metrics.upstreamCall(slug, kind, 'cancelled', seconds);
          throw signal.aborted ? signal.reason : err;
        }
        retryInMs = rateLimitRetryMs(err);
        metrics.upstreamCall(slug, kind, retryInMs === null ? 'error' : 'rate_limited', seconds);
        if (retryInMs === null) throw err;
      } finally {
        permit.release(tokens);
      }
      await limiter.pause(slug, retryInMs);
    }
  }

  async close(): Promise<void> {
    await this.ledger.close();
  }
}
