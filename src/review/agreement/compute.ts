import type { Scale } from '../../shared/scale.js';
import { type BootstrapOptions, byPromptHash, figuresOf } from './figures.js';
import type { Figures } from './figures-schema.js';
import type { Pair } from './pairs.js';

/** κ between the first two reviewers of each item (no intervals: a side figure). */
export interface InterAnnotatorFigures {
  n: number;
  percent_agreement: number | null;
  kappa: number | null;
  weighted_kappa: number | null;
}

/** One evaluator's pairs as read from the database: plain data, handed to a statistics thread as is. */
export interface AgreementInput {
  scale: Scale;
  pairs: Pair[];
  /** Pairs of two reviewers' answers, or null where none are measured (a run's rows). */
  people: Pair[] | null;
}

export interface AgreementFigures {
  groups: Figures[];
  inter_annotator: InterAnnotatorFigures | null;
}

/** What one computation takes: each evaluator's pairs (one, or two side by side) and the bootstrap. */
export interface AgreementJob {
  sets: AgreementInput[];
  boot: BootstrapOptions;
}

function interAnnotator(scale: Scale, people: Pair[] | null, seed: number): InterAnnotatorFigures | null {
  if (!people?.length) return null;
  const f = figuresOf(scale, null, people, { seed, resamples: 0 });
  return { n: f.n, percent_agreement: f.percent_agreement, kappa: f.kappa, weighted_kappa: f.weighted_kappa };
}

/**
 * The figures of each set: per prompt hash, with bootstrap intervals, and between reviewers. CPU-bound
 * (resamples × pairs): the server runs it on a statistics thread, never on the event loop.
 */
export function computeAgreement(job: AgreementJob): AgreementFigures[] {
  return job.sets.map((set) => ({
    groups: [...byPromptHash(set.pairs)].map(([hash, group]) => figuresOf(set.scale, hash, group, job.boot)),
    inter_annotator: interAnnotator(set.scale, set.people, job.boot.seed),
  }));
}
