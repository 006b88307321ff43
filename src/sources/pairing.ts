import type { PlannedSide, ReadSide, RunPlan } from '../engine/plan.js';
import { isGenerated } from '../engine/plan.js';
import { containerSource } from './container.js';
import { datasetSource } from './dataset.js';
import { sessionsSource } from './sessions.js';
import { toolStepsSource } from './tool-steps.js';
import { tracesSource } from './traces.js';

type Sides = Pick<RunPlan['sides'], 'sample' | 'ground_truth'>;

const omittedSide = (side: ReadSide): ReadSide => ({ ...side, omitted: true });

/**
 * Whether `side` reads the run's container's recorded traffic: its task logs, or sessions, traces or tool
 * steps (of any container, whose items no task log of the run's container could be the reference of).
 */
function readsOwnTraffic(side: ReadSide, containerId: string): boolean {
  if ([sessionsSource.type, tracesSource.type, toolStepsSource.type].includes(side.type)) return true;
  return side.type === containerSource.type && side.ref === containerId;
}

/**
 * The side an omitted side stands for beside `other` (`own`: the container's task logs it resolved to).
 * Beside recorded traffic it is that very side (same source, filter and range): no reference for itself,
 * whatever range the request gave. Either way it adds no positions.
 */
function omittedBeside(other: PlannedSide, own: PlannedSide, containerId: string): PlannedSide {
  if (isGenerated(own)) return own;
  if (!isGenerated(other) && readsOwnTraffic(other, containerId)) return omittedSide(other);
  return omittedSide(own);
}

/**
 * How a run's sample and ground truth go together, decided once at creation and kept in the plan:
 * - an omitted side never adds positions; beside the run container's task logs, or beside sessions or
 *   traces, it is the other side itself, so that scorers get no ground truth (a code evaluator
 *   `ground_truth=None`), as the task logs' rule says;
 * - a dataset as the ground truth of a sessions sample is paired by session: each session's expected row
 *   is the row naming it (`metadata.session_id` or `metadata.session_key`), never the row at its position.
 */
export function pairSides(
  sides: Sides,
  omitted: { sample: boolean; ground_truth: boolean },
  containerId: string,
): Sides {
  let { sample, ground_truth } = sides;
  if (omitted.ground_truth) ground_truth = omittedBeside(sample, ground_truth, containerId);
  else if (omitted.sample) sample = omittedBeside(ground_truth, sample, containerId);
  if (
    !isGenerated(sample) &&
    !isGenerated(ground_truth) &&
    !omitted.ground_truth &&
    sample.type === sessionsSource.type &&
    ground_truth.type === datasetSource.type
  ) {
    ground_truth = { ...ground_truth, pairing: 'session' };
  }
  return { sample, ground_truth };
}
