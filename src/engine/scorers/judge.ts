import { createJudgeScorer, judgeNeeds } from '../../scoring/judge/scorer.js';
import type { ScorerKind } from './kind.js';

/** LLM-as-judge evaluators (pointwise or pairwise): what their prompt uses is what they need. */
export const judgeScorer: ScorerKind = {
  callsModel: () => true,
  modelOf: (ev) => ev.model ?? null,
  needs: (ev) => judgeNeeds(ev),
  create: (ev, ports) =>
    createJudgeScorer(ev, (request, signal) => ports.complete(ev.model ?? '', request, signal)),
};
