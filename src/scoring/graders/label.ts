import { parseJson } from '../../shared/json.js';

/**
 * How a label grader (`label_model`) records its verdict on a sample, written and read only here: the
 * label in the row's `extra.scores.label`, and said in its reasoning as `label: <label>` (rows stored
 * before `scores` was kept have only the reasoning).
 */

const REASON = /^label: (.+)$/;

/** The reasoning a label grader stores with its verdict. */
export function labelReason(label: string): string {
  return `label: ${label}`;
}

/** The label a label grader recorded on a sample's row (null: not a label grader's verdict). */
export function recordedLabel(extra: string | null, reasoning: string | null): string | null {
  const parsed = parseJson<{ scores?: { label?: unknown } } | null>(extra, null);
  if (typeof parsed?.scores?.label === 'string') return parsed.scores.label;
  return REASON.exec(reasoning ?? '')?.[1] ?? null;
}
