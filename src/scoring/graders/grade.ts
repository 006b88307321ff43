import { type Formula, FormulaError, parseFormula } from './formula.js';
import { computeSimilarity } from './metric-pool.js';
import { labelModel, scoreModel } from './model.js';
import { pythonGrade } from './python.js';
import { failed, type GraderContext, type GraderPorts, type GraderResult, scored } from './result.js';
import type { Grader, MultiGrader, StringCheckGrader, SubGrader, TextSimilarityGrader } from './schemas.js';
import { renderTemplate, TemplateError } from './template.js';
import { cosine, embeddingModelOf, stringCheck } from './text.js';
import { textLimitProblem } from './text-limits.js';

function gradeStringCheck(grader: StringCheckGrader, ns: GraderContext): GraderResult {
  const input = renderTemplate(grader.input, { ...ns });
  const reference = renderTemplate(grader.reference, { ...ns });
  const ok = stringCheck(grader.operation, input, reference);
  return scored(ok ? 1 : 0, ok, { scores: { input, reference } });
}

async function gradeTextSimilarity(
  grader: TextSimilarityGrader,
  ns: GraderContext,
  ports: GraderPorts,
  signal: AbortSignal,
): Promise<GraderResult> {
  const input = renderTemplate(grader.input, { ...ns });
  const reference = renderTemplate(grader.reference, { ...ns });
  const threshold = grader.pass_threshold;
  const metric = grader.evaluation_metric;
  const tooLong = textLimitProblem(metric, input, reference);
  if (tooLong) return failed('text_too_long', tooLong.message);
  if (metric !== 'cosine') {
    let value: number;
    try {
      value = await computeSimilarity(metric, input, reference, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      return failed('other_error', `${metric} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    return scored(value, threshold === undefined ? null : value >= threshold, {
      scores: { [metric]: value },
    });
  }
  const model = embeddingModelOf(grader);
  let embedded: Awaited<ReturnType<GraderPorts['embed']>>;
  try {
    embedded = await ports.embed(model, [input, reference], signal);
  } catch (err) {
    if (signal.aborted) throw err;
    return failed(
      'model_grader_server_error',
      err instanceof Error ? err.message : 'The embeddings call failed',
      {
        calls: 1,
      },
    );
  }
  const [a, b] = embedded.vectors;
  if (!a || !b)
    return failed('model_grader_parse_error', `The embeddings model ${model} returned no vectors`);
  const value = cosine(a, b);
  const usage = embedded.usage ? { [model]: embedded.usage } : {};
  return scored(value, threshold === undefined ? null : value >= threshold, {
    scores: { cosine: value },
    usage,
    cost: embedded.cost,
    calls: 1,
  });
}

/** The sub-graders of a multi grader by name: the SDK's one grader, or a map of them. */
export function subGradersOf(grader: MultiGrader): Record<string, SubGrader> {
  const g = grader.graders;
  if (typeof (g as { type?: unknown }).type === 'string') {
    const one = g as SubGrader;
    return { [one.name]: one };
  }
  return g as Record<string, SubGrader>;
}

/** A text_similarity grader's rendered text over the caps: where it is in the definition, and why. */
export interface OversizedText {
  path: string[];
  message: string;
}

/**
 * The texts of `grader` (a multi grader's sub-graders included) that are over text_similarity's caps
 * once rendered for `ns`, so that graders/run can refuse the request before any work. A template that
 * does not render is left to `grade`, which reports it.
 */
export function oversizedTexts(grader: Grader, ns: GraderContext): OversizedText[] {
  if (grader.type === 'multi') {
    const single = typeof (grader.graders as { type?: unknown }).type === 'string';
    return Object.entries(subGradersOf(grader)).flatMap(([name, sub]) =>
      oversizedTexts(sub, ns).map((o) => ({ ...o, path: ['graders', ...(single ? [] : [name]), ...o.path] })),
    );
  }
  if (grader.type !== 'text_similarity') return [];
  let input: string;
  let reference: string;
  try {
    input = renderTemplate(grader.input, { ...ns });
    reference = renderTemplate(grader.reference, { ...ns });
  } catch (err) {
    if (err instanceof TemplateError) return [];
    throw err;
  }
  const problem = textLimitProblem(grader.evaluation_metric, input, reference);
  return problem ? [{ path: [problem.field], message: problem.message }] : [];
}

async function gradeMulti(
  grader: MultiGrader,
  ns: GraderContext,
  ports: GraderPorts,
  signal: AbortSignal,
): Promise<GraderResult> {
  const subs = subGradersOf(grader);
  let formula: Formula;
  try {
    formula = parseFormula(grader.calculate_output, Object.keys(subs));
  } catch (err) {
    if (err instanceof FormulaError) {
      return failed(err.kind === 'parse' ? 'formula_parse_error' : 'invalid_variable_error', err.message);
    }
    throw err;
  }
  const names = Object.keys(subs);
  const results = await Promise.all(names.map((name) => grade(subs[name] as SubGrader, ns, ports, signal)));
  const combined = scored(0, null, { subRewards: {} });
  const values: Record<string, number> = {};
  let firstError: GraderResult | null = null;
  names.forEach((name, i) => {
    const r = results[i] as GraderResult;
    combined.subRewards[name] = r.reward;
    combined.scores[name] = r.scores;
    combined.cost += r.cost;
    combined.calls += r.calls;
    for (const [model, u] of Object.entries(r.usage)) {
      const prev = combined.usage[model] ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
      combined.usage[model] = {
        prompt_tokens: prev.prompt_tokens + u.prompt_tokens,
        completion_tokens: prev.completion_tokens + u.completion_tokens,
        total_tokens: prev.total_tokens + u.total_tokens,
      };
    }
    for (const [flag, on] of Object.entries(r.errors)) {
      if (on) (combined.errors as unknown as Record<string, unknown>)[flag] = on;
    }
    if (r.reward === null) firstError ??= r;
    else values[name] = r.reward;
  });
  const errored = firstError as GraderResult | null;
  if (errored?.error) {
    return {
      ...combined,
      reward: null,
      passed: null,
      error: { ...errored.error, message: errored.error.message },
    };
  }
  try {
    combined.reward = formula.evaluate(values);
  } catch (err) {
    if (!(err instanceof FormulaError)) throw err;
    const f = failed('other_error', err.message);
    return { ...combined, reward: null, error: f.error, errors: { ...combined.errors, other_error: true } };
  }
  return combined;
}

/**
 * Grades one item with any grader: the one implementation behind graders/run, evaluators of the
 * grader types and (later) eval runs. Never throws for the item's own problems (an unresolved
 * template reference, an unparseable model reply, a failing python grade): they come back as an
 * errored result. Throws only when `signal` aborts.
 */
export async function grade(
  grader: Grader,
  ns: GraderContext,
  ports: GraderPorts,
  signal: AbortSignal,
): Promise<GraderResult> {
  try {
    switch (grader.type) {
      case 'string_check':
        return gradeStringCheck(grader, ns);
      case 'text_similarity':
        return await gradeTextSimilarity(grader, ns, ports, signal);
      case 'score_model':
        return await scoreModel(grader, ns, ports, signal);
      case 'label_model':
        return await labelModel(grader, ns, ports, signal);
      case 'python':
        return await pythonGrade(grader, ns, ports, signal);
      case 'multi':
        return await gradeMulti(grader, ns, ports, signal);
    }
  } catch (err) {
    if (err instanceof TemplateError) return failed('invalid_variable_error', err.message);
    throw err;
  }
}
