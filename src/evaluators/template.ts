import { requireTemplate } from '../catalog/judge-templates/catalog.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { type Scale, scaleProblem } from '../shared/scale.js';
import type { CreateEvaluator } from './schemas.js';

/**
 * An evaluator made from a catalog template: the template's prompt, scale and pass threshold, each unless
 * the request gives its own, and the template's `name@version` recorded (a judge only).
 */
export function applyTemplate(body: CreateEvaluator): CreateEvaluator {
  if (body.template === undefined) return body;
  if (body.type !== 'judge') {
    throw ApiError.invalid(['body', 'template'], 'Catalog templates make judge evaluators (type: judge)');
  }
  const t = requireTemplate(body.template, ['body', 'template']);
  const prompt = body.prompt ?? t.prompt;
  return {
    ...body,
    prompt,
    scale: body.scale ?? t.scale,
    pass_threshold: body.pass_threshold === undefined ? t.pass_threshold : body.pass_threshold,
    // A prompt of the user's own is not the template's, even at creation.
    template: prompt === t.prompt ? t.id : undefined,
  };
}

/** The problems of a declared scale the schema accepts (bounds out of order, repeated labels). */
export function checkScale(scale: unknown): ValidationIssue[] {
  if (scale === undefined || scale === null) return [];
  const problem = scaleProblem(scale as Scale);
  return problem ? [{ loc: ['body', 'scale'], msg: problem, type: 'value_error' }] : [];
}
