/** Human review (migration 025): queues, their items, who holds or has done each item, and human scores. */
export interface AnnotationQueueTable {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  /** JSON array of the rubric's evaluator ids: the scales reviewers score on. */
  evaluators: string;
  /** 1 when the rubric asks for a free-text comment beside the scores. */
  comment: number;
  reviewers_per_item: number;
  claim_seconds: number;
  created_at: string;
  updated_at: string;
}

export interface AnnotationItemTable {
  id: string;
  queue_id: string;
  /** `task_log`, `session` or `run_sample`. */
  kind: string;
  /** The task log's id, the session's id, or `<run>/<launch>/<position>`. */
  ref: string;
  run_id: string | null;
  launch_index: number | null;
  position: number | null;
  /** How the item came in: `api`, `rule:failed`, `rule:share`, `rule:score_range`. */
  source: string;
  /** `open` (waiting for reviews), `done` (reviewed by as many people as it needs) or `flagged`. */
  state: string;
  needed: number;
  /** Live claims plus reviews done: never above `needed`. */
  taken: number;
  reviews: number;
  flag: string | null;
  created_at: string;
  updated_at: string;
}

export interface AnnotationAssignmentTable {
  item_id: string;
  reviewer: string;
  queue_id: string;
  /** `claimed` (until `expires_at`), `reviewed`, `skipped` or `flagged`: a reviewer is never offered an item twice. */
  state: string;
  /** Unix ms; only for `claimed`. bigint: text on PostgreSQL. */
  expires_at: number | string | null;
  updated_at: string;
}

export interface AnnotationReviewTable {
  id: string;
  project_id: string;
  queue_id: string;
  item_id: string;
  evaluator_id: string;
  reviewer: string;
  score: number | null;
  label: string | null;
  passed: number | null;
  comment: string | null;
  /** The review that corrected this one; null for the current review. */
  superseded_by: string | null;
  created_at: string;
}

/** A settled answer (migration 036): the one that counts where an item's reviewers disagree. */
export interface AnnotationSettlementTable {
  id: string;
  project_id: string;
  queue_id: string;
  item_id: string;
  evaluator_id: string;
  score: number | null;
  label: string | null;
  passed: number | null;
  /** `majority` (the answer most reviewers gave), `review` (one reviewer's answer) or `value` (given). */
  method: string;
  /** The review whose answer was chosen (`review`), else null. */
  review_id: string | null;
  comment: string | null;
  /** The reviewer id of whoever settled it. */
  settled_by: string;
  created_at: string;
}
