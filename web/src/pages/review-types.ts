/** What the Review and Agreement pages read from the dashboard's review routes. */

export type Scale =
  | { type: 'pass_fail' }
  | { type: 'ordinal'; min: number; max: number }
  | { type: 'continuous'; min: number | null; max: number | null }
  | { type: 'labels'; labels: string[] };

export interface RubricEvaluator {
  id: string;
  name: string;
  scale: Scale | Record<string, never>;
}

export interface Queue {
  id: string;
  name: string;
  description: string | null;
  rubric: { evaluators: RubricEvaluator[]; comment: boolean };
  reviewers_per_item: number;
  claim_seconds: number;
  counts: { total: number; open: number; done: number; flagged: number; reviews: number };
  created_at: string;
}

export interface ReviewerProgress {
  reviewer: string;
  name: string;
  reviewed: number;
  skipped: number;
  flagged: number;
  claimed: number;
}

export interface QueueDetail {
  queue: Queue;
  reviewer: string;
  remaining: number;
  progress: ReviewerProgress[];
}

export interface JudgeScore {
  evaluator_id: string;
  /** The evaluator's name. */
  evaluator: string;
  /** A label grader's label. */
  label: string | null;
  /** scored, error or missing: an errored position has no score and is never a pass. */
  status: string;
  error: { code: string; message: string } | null;
  score: number | null;
  passed: boolean | null;
  reasoning: string | null;
  prompt_hash: string | null;
}

export interface ItemView {
  item: { id: string; kind: string; ref: string; state: string; source: string };
  content: {
    input: unknown;
    output: unknown;
    expected: unknown;
    metadata: unknown;
    /** The recorded call (or a turn of the session) failed: what it kept is no answer. */
    error: { code: string; message: string } | null;
  };
  judge: JudgeScore[] | null;
  claim: { reviewer: string; expires_at: string } | null;
}

/** A human answer on one evaluator's scale. */
export interface Answer {
  score?: number;
  passed?: boolean;
  label?: string;
}

export interface MyReview {
  evaluator_id: string;
  score: number | null;
  passed: boolean | null;
  label: string | null;
  comment: string | null;
}

export type Interval = [number, number] | null;

export interface Figures {
  prompt_hash: string | null;
  n: number;
  percent_agreement: number | null;
  kappa: number | null;
  weighted_kappa: number | null;
  pearson: number | null;
  spearman: number | null;
  mae: number | null;
  confusion: { labels: (string | number)[]; matrix: number[][] } | null;
  intervals: Record<
    'percent_agreement' | 'kappa' | 'weighted_kappa' | 'pearson' | 'spearman' | 'mae',
    Interval
  >;
  disagreements: { item_id: string; judge: unknown; human: unknown }[];
}

export interface Agreement {
  evaluator: { id: string; name: string; scale: Scale };
  n: number;
  groups: Figures[];
  inter_annotator: {
    n: number;
    percent_agreement: number | null;
    kappa: number | null;
    weighted_kappa: number | null;
    reviewers: number;
    fleiss_kappa: number | null;
    krippendorff_alpha: number | null;
    alpha_level: 'nominal' | 'ordinal' | 'interval';
    intervals: Record<
      'percent_agreement' | 'kappa' | 'weighted_kappa' | 'fleiss_kappa' | 'krippendorff_alpha',
      Interval
    >;
  } | null;
}
