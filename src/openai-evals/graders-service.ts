import { performance } from 'node:perf_hooks';
import { grants, type Permission } from '../auth/permissions.js';
import type { EvaluatorSnapshot } from '../engine/plan.js';
import type { ScorerRegistry } from '../engine/scorers/registry.js';
import { createModelCaller } from '../llm/call-model.js';
import type { ResolvedModel } from '../llm/models/types.js';
import type { ProviderLayer } from '../llm/provider-layer.js';
import type { ModelLimiter } from '../ratelimit/model-limiter.js';
import { grade, oversizedTexts, subGradersOf } from '../scoring/graders/grade.js';
import { wrapPythonSource } from '../scoring/graders/python.js';
import type { GraderPorts, GraderResult } from '../scoring/graders/result.js';
import { sampleNamespace } from '../scoring/graders/sample.js';
import type { Grader, SubGrader } from '../scoring/graders/schemas.js';
import { graderIssues } from '../scoring/graders/validate.js';
import { type Scorer, ScorerSetupError } from '../scoring/types.js';
import type { Payer, SpendGuard } from '../shared/budget.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { badRequest } from './errors.js';

/**
 * What the graders API needs: model resolution, the provider layer, the budgets and the model limiter
 * (its model calls are paid calls, as the gateway's are) and the code sandbox.
 */
export interface GraderApiPorts {
  resolveModel(projectId: string, ref: string): Promise<ResolvedModel>;
  providers: Pick<ProviderLayer, 'complete' | 'embed'>;
  /** The key's and the project's budgets: reserved before each model call, charged after. */
  budgets?: SpendGuard;
  /** The models' limits (concurrency, RPM, TPM), shared with runs. */
  models?: { limiter: Pick<ModelLimiter, 'acquire'>; concurrency: number };
  sandbox: {
    status(): Promise<{ available: boolean; reason?: string }>;
    createScorer(evaluator: EvaluatorSnapshot): Promise<Scorer>;
  };
  /** The app's scorer kinds: the models a grader calls, and what it asks of the caller. */
  scorerKinds: ScorerRegistry;
}
type ServiceDeps = GraderApiPorts;

/** A grader's parts as the scorer registry knows them: a multi grader's sub-graders, else itself. */
function partsOf(grader: Grader): SubGrader[] {
  return grader.type === 'multi' ? Object.values(subGradersOf(grader)) : [grader];
}

/** The models a grader calls (judges' `model`, cosine's embeddings model), as the registry says. */
export function modelsOf(scorerKinds: ScorerRegistry, grader: Grader): string[] {
  const models = partsOf(grader).map((g) => scorerKinds.capabilitiesOf({ type: g.type, grader: g }).model);
  return [...new Set(models.filter((m): m is string => m !== null))];
}

/** A grader definition, or 400 naming every problem. */
export function checkGrader(value: unknown): Grader {
  const issues = graderIssues(value, ['body', 'grader']);
  if (issues.length) throw badRequest(issues);
  return value as Grader;
}

function requirePermission(permissions: readonly string[], needed: Permission, why: string): void {
  if (!grants(permissions, needed)) {
    throw new ApiError('permission_denied', `This API key lacks the '${needed}' permission (${why})`, {
      required: needed,
    });
  }
}

/**
 * A model name as a grader gives it: a registered label or id wins, then a provider slug, then a bare
 * OpenAI name (`gpt-4o-mini`) as `openai/gpt-4o-mini`. A name that resolves to nothing in the project
 * is a 400 naming the field, as for any other invalid grader field.
 */
export async function resolveGraderModels(
  deps: Pick<GraderApiPorts, 'resolveModel'>,
  projectId: string,
  names: readonly string[],
): Promise<Map<string, ResolvedModel>> {
  const resolved = new Map<string, ResolvedModel>();
  const issues: ValidationIssue[] = [];
  for (const name of names) {
    try {
      resolved.set(name, await resolveOne(deps, projectId, name));
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500) throw err;
      issues.push({
        loc: ['body', 'grader', 'model'],
        msg: `model '${name}': ${err.message}`,
        type: 'model',
      });
    }
  }
  if (issues.length) throw badRequest(issues);
  return resolved;
}

async function resolveOne(deps: Pick<GraderApiPorts, 'resolveModel'>, projectId: string, name: string) {
  try {
    return await deps.resolveModel(projectId, name);
  } catch (err) {
    const notFound = err instanceof ApiError && (err.code === 'model_not_found' || err.code === 'not_found');
    if (!notFound || name.includes('/')) throw err;
    return deps.resolveModel(projectId, `openai/${name}`);
  }
}

/** Grader ports of one call, and the budget's refusal when one of its model calls met it. */
export interface PaidGraderPorts extends GraderPorts {
  refusal(): ApiError | null;
}

/**
 * Ports bound to one payer's resolved models, each model call a paid call (the model's limits, the
 * payer's budgets, the provider layer).
 */
export function directPorts(
  deps: ServiceDeps,
  payer: Payer,
  models: Map<string, ResolvedModel>,
): PaidGraderPorts {
  let refusal: ApiError | null = null;
  const modelOf = (name: string): ResolvedModel => {
    const m = models.get(name);
    if (!m) throw new ApiError('bad_request', `model '${name}' was not resolved`);
    return m;
  };
  const caller = createModelCaller({
    providers: deps.providers,
    budgets: deps.budgets,
    limits: deps.models,
  });
  const refused = async (err: unknown) => {
    if (err instanceof ApiError) refusal ??= err;
  };
  return {
    refusal: () => refusal,
    complete: (name, request, signal) => caller.complete(modelOf(name), request, { payer, signal, refused }),
    embed: (name, input, signal) => caller.embed(modelOf(name), input, { payer, signal, refused }),
    python: async (grader) => {
      const sandbox = await deps.sandbox.status();
      if (!sandbox.available) {
        throw new ScorerSetupError(
          'sandbox_unavailable',
          `Python graders cannot run here: ${sandbox.reason ?? 'no sandbox'}`,
        );
      }
      return deps.sandbox.createScorer({
        id: `grader_${grader.name}`,
        name: grader.name,
        type: 'code',
        mode: 'pointwise',
        model: null,
        prompt: null,
        api: null,
        inference_parameters: {},
        pass_threshold: grader.pass_threshold ?? null,
        source: wrapPythonSource(grader.source),
        requirements: [],
      });
    },
  };
}

export interface RunGraderBody {
  grader: unknown;
  model_sample: unknown;
  item?: unknown;
}

/** openai `GraderRunResponse` for one graded sample. */
export function runResponse(grader: Grader, result: GraderResult, seconds: number) {
  const usage = Object.values(result.usage);
  const scores: Record<string, unknown> = { ...result.scores };
  return {
    reward: result.reward ?? 0,
    sub_rewards: grader.type === 'multi' ? result.subRewards : {},
    metadata: {
      name: grader.name,
      type: grader.type,
      errors: result.errors,
      execution_time: seconds,
      scores,
      token_usage: usage.length ? usage.reduce((n, u) => n + u.total_tokens, 0) : null,
      sampled_model_name: null,
      error_message: result.error?.message ?? null,
    },
    model_grader_token_usage_per_model: result.usage,
  };
}

/**
 * Grades one sample. `signal` aborts when the client leaves: the grade stops (a metric's thread is
 * terminated, model calls are cancelled) and the answer is a 408 that nobody reads.
 */
export async function runGrader(
  deps: ServiceDeps,
  principal: { projectId: string; keyId: string | null; permissions: readonly string[] },
  body: RunGraderBody,
  signal: AbortSignal = new AbortController().signal,
) {
  const issues = graderIssues(body.grader, ['body', 'grader']);
  if (typeof body.model_sample !== 'string') {
    issues.push({ loc: ['body', 'model_sample'], msg: 'model_sample must be a string', type: 'string' });
  }
  if (issues.length) throw badRequest(issues);
  const grader = body.grader as Grader;
  const ns = { item: body.item ?? {}, sample: { ...sampleNamespace(body.model_sample) } };
  // Texts over text_similarity's caps are refused before any model call or computation.
  const oversized = oversizedTexts(grader, ns).map(
    (o): ValidationIssue => ({ loc: ['body', 'grader', ...o.path], msg: o.message, type: 'text_too_long' }),
  );
  if (oversized.length) throw badRequest(oversized);
  const parts = partsOf(grader).map((g) => ({ type: g.type, grader: g }));
  for (const ask of deps.scorerKinds.permissionsAskedBy(parts, 'the grader', 'models')) {
    requirePermission(principal.permissions, ask.permission, ask.why);
  }
  const names = modelsOf(deps.scorerKinds, grader);
  const models = await resolveGraderModels(deps, principal.projectId, names);
  const payer = { projectId: principal.projectId, keyId: principal.keyId };
  // A spent budget refuses the call as the gateway does (429 budget_exceeded), before any model call.
  if (names.length) await deps.budgets?.check(payer);
  const ports = directPorts(deps, payer, models);
  const t0 = performance.now();
  let result: GraderResult;
  try {
    result = await grade(grader, ns, ports, signal);
  } catch (err) {
    if (signal.aborted)
      throw new ApiError('request_timeout', 'The client closed the request before it was graded');
    throw err;
  }
  // A model call the budget refused midway: the grade is incomplete, the refusal is the answer.
  const refusal = ports.refusal();
  if (refusal) throw refusal;
  return runResponse(grader, result, (performance.now() - t0) / 1000);
}
