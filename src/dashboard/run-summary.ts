import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { RunPlan } from '../engine/plan.js';
import type { RunRow } from '../runs/repository.js';
import { sideLabels } from '../runs/service.js';
import { parseJson } from '../shared/json.js';
import type { SourceRegistry } from '../sources/registry.js';

/**
 * What a run page shows besides the run: its evaluators' names and modes, its launches' models, and the
 * labels of the datasets and containers its sides read.
 */
export async function planSummary(db: Kysely<Database>, sourceKinds: SourceRegistry, row: RunRow) {
  const plan = parseJson<RunPlan | null>(row.plan, null);
  // The datasets and containers the sides' views name (each side's source kind says which it shows).
  const views = plan
    ? [plan.sides.sample, plan.sides.ground_truth, plan.sides.baseline].map(sourceKinds.sideView)
    : [];
  return {
    container_label: row.container_label,
    labels: await sideLabels(db, row.project_id, {
      datasets: views.flatMap((v) => v?.dataset ?? []),
      containers: views.flatMap((v) => v?.container ?? []),
    }),
    evaluators: (plan?.evaluators ?? []).map((e) => ({
      id: e.id,
      name: e.name,
      type: e.type,
      mode: e.mode,
      pass_threshold: e.pass_threshold,
    })),
    launches: plan?.launches ?? [],
    /** The dashboard page showing one of the samples' items (a session, a trace), when their kind has one. */
    item_page: plan ? (sourceKinds.kindOf(plan.sides.sample).itemPage ?? null) : null,
  };
}
