import type { EvaluatorSnapshot } from '../engine/plan.js';
import { type JsonObject, parseJson } from '../shared/json.js';
import { graderOfRow } from './graders.js';
import type { EvaluatorRow } from './repository.js';
import { scaleOf } from './scale.js';
import { isTrajectoryType, trajectoryOfRow } from './trajectory.js';

/** An evaluator as a run (or a guard) snapshots it: what scoring it needs, decoded once. */
export function snapshotOf(row: EvaluatorRow): EvaluatorSnapshot {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    mode: row.mode,
    model: row.model,
    prompt: row.prompt,
    api: row.api,
    inference_parameters: parseJson<JsonObject>(row.inference_parameters, {}),
    pass_threshold: row.pass_threshold,
    source: row.source,
    requirements: parseJson<string[]>(row.requirements, []),
    grader: isTrajectoryType(row.type) ? null : graderOfRow(row),
    trajectory: trajectoryOfRow(row),
    scale: scaleOf(row),
  };
}
