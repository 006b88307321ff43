import { ScorerSetupError } from '../types.js';
import { failed, type GraderContext, type GraderPorts, type GraderResult, scored } from './result.js';
import type { PythonGrader } from './schemas.js';

/**
 * A python grader's source as the code-evaluator sandbox runs it: the runner calls
 * `evaluate(sample, ground_truth, baseline)`, which hands `grade` the grader's two namespaces.
 * `image_tag` is ignored: every grader runs in the sandbox's own interpreter and limits.
 */
export function wrapPythonSource(source: string): string {
  return `${source}\n\n\ndef evaluate(sample, ground_truth, baseline):\n    return grade(sample["output"], sample["input"])\n`;
}

export async function pythonGrade(
  grader: PythonGrader,
  ns: GraderContext,
  ports: GraderPorts,
  signal: AbortSignal,
): Promise<GraderResult> {
  let scorer: Awaited<ReturnType<GraderPorts['python']>>;
  try {
    scorer = await ports.python(grader);
  } catch (err) {
    if (err instanceof ScorerSetupError) {
      const result = failed('python_grader_server_error', err.message);
      result.errors.python_grader_server_error_type = err.code;
      return result;
    }
    throw err;
  }
  try {
    const [outcome] = await scorer.scoreBatch(
      [
        {
          position: 0,
          sample: { id: '0', input: ns.item, output: ns.sample, expected: null, metadata: {}, raw: null },
          groundTruth: null,
          baseline: null,
        },
      ],
      signal,
    );
    if (!outcome || outcome.error || outcome.score === null) {
      const message = outcome?.error?.message ?? 'grade returned no score';
      return failed('python_grader_runtime_error', message, { logs: outcome?.logs ?? null });
    }
    const passed =
      grader.pass_threshold === undefined ? outcome.passed : outcome.score >= grader.pass_threshold;
    return scored(outcome.score, passed, { reason: outcome.reason, logs: outcome.logs });
  } finally {
    await scorer.close();
  }
}
