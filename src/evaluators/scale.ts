import type { EvaluatorTable } from '../db/schema.js';
import { parseJson } from '../shared/json.js';
import type { Scale } from '../shared/scale.js';
import { graderOfRow } from './graders.js';

/**
 * The scale an evaluator's scores are on: the one it declares (a catalog template's, or the user's), else
 * what its type implies (a label grader's labels, a score grader's range, a string check's pass/fail);
 * a judge or code evaluator without one scores any number.
 */
export function scaleOf(row: Pick<EvaluatorTable, 'type' | 'scale' | 'grader' | 'mode'>): Scale {
  const declared = parseJson<Scale | null>(row.scale, null);
  if (declared) return declared;
  const grader = graderOfRow(row) as { labels?: string[]; range?: number[] } | null;
  switch (row.type) {
    case 'string_check':
      return { type: 'pass_fail' };
    case 'label_model':
      return { type: 'labels', labels: grader?.labels ?? [] };
    case 'score_model':
      return { type: 'continuous', min: grader?.range?.[0] ?? 0, max: grader?.range?.[1] ?? 1 };
    case 'text_similarity':
      return { type: 'continuous', min: 0, max: 1 };
    default:
      return row.mode === 'pairwise'
        ? { type: 'continuous', min: 0, max: 1 }
        : { type: 'continuous', min: null, max: null };
  }
}
