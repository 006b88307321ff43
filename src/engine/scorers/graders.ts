import type { SubGrader } from '../../scoring/graders/schemas.js';
import { createGraderScorer, pythonGraderScorer } from '../../scoring/graders/scorer.js';
import { embeddingModelOf } from '../../scoring/graders/text.js';
import { ScorerSetupError } from '../../scoring/types.js';
import type { ScorerKind } from './kind.js';
import { OUTPUT_ONLY } from './kind.js';

/** Model graders ask their model; text similarity by cosine asks an embeddings model; the others compute. */
function graderModel(grader: SubGrader | null | undefined): string | null {
  if (grader?.type === 'score_model' || grader?.type === 'label_model') return grader.model;
  if (grader?.type === 'text_similarity' && grader.evaluation_metric === 'cosine')
    return embeddingModelOf(grader);
  return null;
}

/** Evaluators of the grader types (string_check, text_similarity, score_model, label_model). */
export const graderScorer: ScorerKind = {
  callsModel: (ev) => graderModel(ev.grader) !== null,
  modelOf: (ev) => graderModel(ev.grader),
  needs: () => OUTPUT_ONLY,
  create: (ev, ports) => {
    if (!ev.grader) throw new ScorerSetupError('invalid_evaluator', `Evaluator ${ev.name} has no grader`);
    return createGraderScorer(ev.grader, {
      complete: ports.complete,
      embed: ports.embed,
      python: () =>
        Promise.reject(new ScorerSetupError('not_supported', 'python graders run as code evaluators')),
    });
  },
};

/** A python grader (OpenAI eval runs): the code sandbox, given the grader's namespaces. */
export const pythonGraderKind: ScorerKind = {
  sandboxed: 'Python graders',
  needs: () => OUTPUT_ONLY,
  create: async (ev, ports) => pythonGraderScorer(await ports.createCodeScorer(ev)),
};
