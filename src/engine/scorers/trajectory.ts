import { createTrajectoryScorer } from '../../scoring/trajectory/scorer.js';
import { ScorerSetupError } from '../../scoring/types.js';
import type { ScorerKind } from './kind.js';
import { OUTPUT_ONLY } from './kind.js';

/**
 * Trajectory graders (tool_call_match, trajectory_length): computed from a sample's turns and tool calls
 * and, for tool_call_match, the expected calls its row names; no model call, no sandbox. Where a position
 * lacks what they compare, the scorer answers `missing_data` with the reason.
 */
export const trajectoryScorer: ScorerKind = {
  needs: () => OUTPUT_ONLY,
  outputOptional: true,
  create: (ev) => {
    if (!ev.trajectory)
      throw new ScorerSetupError('invalid_evaluator', `Evaluator ${ev.name} has no trajectory configuration`);
    return createTrajectoryScorer(ev.trajectory);
  },
};
