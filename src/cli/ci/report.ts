import type { RunComparison } from '../../client/index.js';
import type { CiContext } from './ci-env.js';
import type { EvaluatorOutcome } from './gates.js';

/**
 * What `evalgate ci` found, as one document: written as JSON (`--json FILE`), and rendered as Markdown
 * (the report, the step summary, the pull-request comment) and JUnit XML (report-formats.ts).
 */

export type ExperimentStatus = 'passed' | 'failed' | 'error';

export interface RegressedItem {
  evaluator: string;
  launch: number;
  item_id: string | null;
  position: number;
  baseline_score: number;
  run_score: number;
  difference: number;
  input: string;
  url: string | null;
}

export interface ExperimentReport {
  name: string;
  status: ExperimentStatus;
  run_id: string | null;
  run_status: string | null;
  run_url: string | null;
  baseline_id: string | null;
  baseline_note: string;
  compare_url: string | null;
  /** Why the experiment could not run (status error). */
  error: string | null;
  evaluators: EvaluatorOutcome[];
  regressions: RegressedItem[];
  duration_ms: number;
}

export interface CiReport {
  object: 'evalgate.ci_report';
  /** 0 every gate passed, 1 a gate failed, 2 an experiment could not run. */
  exit_code: 0 | 1 | 2;
  status: ExperimentStatus;
  commit: string | null;
  branch: string | null;
  pull_request: number | null;
  job_url: string | null;
  created_at: string;
  experiments: ExperimentReport[];
}

/** Worst regressed items listed in the report, across evaluators. */
export const WORST_ITEMS = 10;

function text(value: unknown, max = 80): string {
  if (value === null || value === undefined) return '';
  const s = (typeof value === 'string' ? value : JSON.stringify(value)).replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** The largest score drops of a comparison, all evaluators together, worst first. */
export function worstItems(comparison: RunComparison, url: string | null): RegressedItem[] {
  return comparison.comparisons
    .flatMap((c) =>
      c.regressions.map((r) => ({
        evaluator: c.evaluator.name,
        launch: c.launch.index,
        item_id: r.item_id,
        position: r.run.position,
        baseline_score: r.baseline.score,
        run_score: r.run.score,
        difference: r.difference,
        input: text(r.input),
        url,
      })),
    )
    .sort((a, b) => a.difference - b.difference)
    .slice(0, WORST_ITEMS);
}

export function overall(experiments: ExperimentReport[]): { status: ExperimentStatus; exit_code: 0 | 1 | 2 } {
  if (experiments.some((x) => x.status === 'error')) return { status: 'error', exit_code: 2 };
  if (experiments.some((x) => x.status === 'failed')) return { status: 'failed', exit_code: 1 };
  return { status: 'passed', exit_code: 0 };
}

export function ciReport(ctx: CiContext, experiments: ExperimentReport[]): CiReport {
  return {
    object: 'evalgate.ci_report',
    ...overall(experiments),
    commit: ctx.commit,
    branch: ctx.branch,
    pull_request: ctx.pullRequest,
    job_url: ctx.jobUrl,
    created_at: new Date().toISOString(),
    experiments,
  };
}

/** The report of an experiment that could not run. */
export function failedToRun(
  name: string,
  error: string,
  started: number,
  runId: string | null = null,
): ExperimentReport {
  return {
    name,
    status: 'error',
    run_id: runId,
    run_status: null,
    run_url: null,
    baseline_id: null,
    baseline_note: '',
    compare_url: null,
    error,
    evaluators: [],
    regressions: [],
    duration_ms: Date.now() - started,
  };
}
