import type { ScorerKind } from './kind.js';
import { OUTPUT_ONLY } from './kind.js';

/**
 * Code evaluators: sandboxed Python. They need only the sample's output to be called; one that cannot
 * score for want of data answers `missing_data` itself (the position is then missing, with its reason).
 */
export const codeScorer: ScorerKind = {
  sandboxed: 'Code evaluators',
  needs: () => OUTPUT_ONLY,
  create: (ev, ports) => ports.createCodeScorer(ev),
};
