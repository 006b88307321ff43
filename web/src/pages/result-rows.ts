import { launchName } from '../components';
import type { RunDetail } from '../types';

/** One row of a run's results: a launch (model, or an experiment's prompt version × model) × an evaluator, shared by the run page and its charts. */
export interface ResultRow {
  launch: number;
  model: string;
  evaluatorId: string;
  evaluator: string;
  avgScore: number | null;
  passRate: number | null;
  passed: number;
  failed: number;
  errors: number;
  missing: number;
  total: number;
  stdev: number | null;
}

/** The per-model × per-evaluator figures of a run's results, one row each. */
export function resultRows(detail: RunDetail): ResultRow[] {
  const rows: ResultRow[] = [];
  for (const launch of detail.run.results?.per_model ?? []) {
    const index = launch.launch_index ?? 0;
    const planned = detail.launches.find((l) => l.index === index);
    const model = launchName(
      launch.model?.slug ?? planned?.model,
      index,
      detail.launches.length,
      launch.prompt ?? planned?.prompt,
    );
    for (const ev of detail.evaluators) {
      const e = launch.per_eval?.[ev.id];
      if (!e) continue;
      rows.push({
        launch: index,
        model,
        evaluatorId: ev.id,
        evaluator: ev.name,
        avgScore: e.avg_score,
        passRate: e.accuracy,
        passed: e.num_passed ?? 0,
        failed: e.num_failed ?? 0,
        errors: e.num_errors ?? 0,
        missing: e.num_missing ?? 0,
        total: e.num_total ?? 0,
        stdev: e.stdev ?? null,
      });
    }
  }
  return rows;
}
