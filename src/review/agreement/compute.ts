import type { Scale } from '../../shared/scale.js';
import { type BootstrapOptions, byPromptHash, categoryOf, figuresOf } from './figures.js';
import type { Figures } from './figures-schema.js';
import type { Pair, Rated } from './pairs.js';
import { type AlphaLevel, fleissKappa, krippendorffAlpha, type Unit } from './raters.js';
import { bootstrapInterval, type Category, categoriesOf, pick } from './stats.js';

type Interval = number[] | null;

/** Agreement among the reviewers themselves, each figure with its bootstrap interval over items. */
export interface InterAnnotatorFigures {
  /** Items with two reviewers or more (the first two of each make the pairs of κ). */
  n: number;
  percent_agreement: number | null;
  kappa: number | null;
  weighted_kappa: number | null;
  /** The most reviewers any one item has. */
  reviewers: number;
  /** Fleiss' κ over every reviewer's answer (categorical scales). */
  fleiss_kappa: number | null;
  /** Krippendorff's α over every reviewer's answer, at the scale's level of measurement. */
  krippendorff_alpha: number | null;
  alpha_level: AlphaLevel;
  intervals: {
    percent_agreement: Interval;
    kappa: Interval;
    weighted_kappa: Interval;
    fleiss_kappa: Interval;
    krippendorff_alpha: Interval;
  };
}

/** Reviewers' answers: the first two of each item paired, and every answer of each item. */
export interface PeopleInput {
  pairs: Pair[];
  units: Rated[];
}

/** One evaluator's pairs as read from the database: plain data, handed to a statistics thread as is. */
export interface AgreementInput {
  scale: Scale;
  pairs: Pair[];
  /** Reviewers' answers among themselves, or null where none are measured (a run's rows). */
  people: PeopleInput | null;
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

function levelOf(scale: Scale): AlphaLevel {
  if (scale.type === 'ordinal') return 'ordinal';
  if (scale.type === 'continuous') return 'interval';
  return 'nominal';
}

/** An answer as the multi-reviewer statistics see it: the category, or the score on a continuous scale. */
function answerValue(scale: Scale, a: Pair['human']): Category | null {
  return scale.type === 'continuous' ? a.score : categoryOf(scale, a);
}

function interAnnotator(
  scale: Scale,
  people: PeopleInput | null,
  boot: BootstrapOptions,
): InterAnnotatorFigures | null {
  if (!people?.pairs.length) return null;
  const f = figuresOf(scale, null, people.pairs, boot);
  const units: Unit[] = people.units
    .map((u) => u.answers.map((a) => answerValue(scale, a)).filter((v): v is Category => v !== null))
    .filter((u) => u.length >= 2);
  const labels = categoriesOf(units.flat(), []);
  const level = levelOf(scale);
  const fleiss = (list: readonly Unit[]) => (level === 'interval' ? null : fleissKappa(list, labels));
  const alpha = (list: readonly Unit[]) => krippendorffAlpha(list, labels, level);
  const interval = (stat: (list: readonly Unit[]) => number | null) =>
    bootstrapInterval(units.length, (i) => stat(pick(units, i)), boot);
  return {
    n: f.n,
    percent_agreement: f.percent_agreement,
    kappa: f.kappa,
    weighted_kappa: f.weighted_kappa,
    reviewers: units.reduce((m, u) => Math.max(m, u.length), 0),
    fleiss_kappa: fleiss(units),
    krippendorff_alpha: alpha(units),
    alpha_level: level,
    intervals: {
      percent_agreement: f.intervals.percent_agreement,
      kappa: f.intervals.kappa,
      weighted_kappa: f.intervals.weighted_kappa,
      fleiss_kappa: level === 'interval' ? null : interval(fleiss),
      krippendorff_alpha: interval(alpha),
    },
  };
}

/** The answers one job's statistics run over (its work is this many × the resamples). */
export function answersOf(input: AgreementInput): number {
  const people = input.people;
  if (!people) return input.pairs.length;
  return input.pairs.length + people.pairs.length + people.units.reduce((n, u) => n + u.answers.length, 0);
}

/**
 * The figures of each set: per prompt hash, with bootstrap intervals, and between reviewers. CPU-bound
 * (resamples × pairs): the server runs it on a statistics thread, never on the event loop.
 */
export function computeAgreement(job: AgreementJob): AgreementFigures[] {
  return job.sets.map((set) => ({
    groups: [...byPromptHash(set.pairs)].map(([hash, group]) => figuresOf(set.scale, hash, group, job.boot)),
    inter_annotator: interAnnotator(set.scale, set.people, job.boot),
  }));
}
