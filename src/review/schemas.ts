import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, Nullable, PageQuery } from '../http/schemas.js';

const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^(?!aq_)\\S(.*\\S)?$',
  description: 'Unique in the project. Must not start with aq_ or with/end in spaces',
});
const EvaluatorRefs = Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
  minItems: 1,
  maxItems: 20,
  description: 'The rubric: evaluators (ids or names) whose scales reviewers score on',
});

export const CreateQueue = Type.Object(
  {
    name: Name,
    description: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
    evaluators: EvaluatorRefs,
    comment: Type.Optional(Type.Boolean({ description: 'The rubric asks for a free-text comment too' })),
    reviewers_per_item: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 20,
        description: 'How many different people review each item (1)',
      }),
    ),
    claim_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 86_400,
        description: 'How long a claim holds an item before it returns to the queue (1800)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateQueue = Static<typeof CreateQueue>;

export const PatchQueue = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
    evaluators: Type.Optional(EvaluatorRefs),
    comment: Type.Optional(Type.Boolean()),
    claim_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
  },
  { additionalProperties: false },
);
export type PatchQueue = Static<typeof PatchQueue>;

const Counts = Type.Object({
  total: Type.Integer({ minimum: 0 }),
  open: Type.Integer({ minimum: 0 }),
  done: Type.Integer({ minimum: 0 }),
  flagged: Type.Integer({ minimum: 0 }),
  reviews: Type.Integer({ minimum: 0, description: 'Current human reviews (corrections not counted twice)' }),
});

export const Queue = Type.Object({
  object: Type.Literal('annotation_queue'),
  id: Type.String(),
  project_id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  rubric: Type.Object({
    evaluators: Type.Array(
      Type.Object({ id: Type.String(), name: Type.String(), scale: FreeObject("The evaluator's scale") }),
    ),
    comment: Type.Boolean(),
  }),
  reviewers_per_item: Type.Integer(),
  claim_seconds: Type.Integer(),
  counts: Counts,
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type Queue = Static<typeof Queue>;
export const QueueList = ListOf(Queue);
export const QueueDeleted = Type.Object({
  object: Type.Literal('annotation_queue'),
  id: Type.String(),
  deleted: Type.Literal(true),
});

export const QueueParam = Type.Object({
  queue: Type.String({ minLength: 1, maxLength: 300, description: 'Queue id or name' }),
});
export const ItemParam = Type.Object({
  queue: Type.String({ minLength: 1, maxLength: 300, description: 'Queue id or name' }),
  item: Type.String({ minLength: 1, maxLength: 100, description: 'Item id' }),
});
export const ReviewParam = Type.Object({
  review: Type.String({ minLength: 1, maxLength: 100, description: 'Review id' }),
});

export const ITEM_KINDS = ['task_log', 'session', 'tool_step', 'run_sample'] as const;
export const ITEM_STATES = ['open', 'done', 'flagged'] as const;

const RunSampleRef = Type.Object(
  {
    run: Type.String({ minLength: 1, maxLength: 100 }),
    position: Type.Integer({ minimum: 0, maximum: 2_147_483_647 }),
    launch: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000, description: 'Launch index (0)' })),
  },
  { additionalProperties: false },
);

const ToolStepRef = Type.Object(
  {
    session: Type.String({ minLength: 1, maxLength: 200, description: 'Session id' }),
    tool_call_id: Type.String({
      minLength: 1,
      maxLength: 300,
      description: 'The tool call’s id in the session',
    }),
  },
  { additionalProperties: false, description: 'A tool step: one tool call of a session' },
);

const Ids = (what: string) =>
  Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 1000, description: what }),
  );

const ItemRule = Type.Object(
  {
    run: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'The run whose positions are chosen' }),
    ),
    monitor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'A monitor (id or name) whose scored calls are chosen (instead of a run)',
      }),
    ),
    evaluator: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 300,
        description: "The evaluator whose rows are read (the rubric's first)",
      }),
    ),
    failed: Type.Optional(Type.Boolean({ description: 'Positions the evaluator failed' })),
    share: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 1,
        description: "A random share of the run's positions, the same for the same seed",
      }),
    ),
    seed: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: 'Seed of the share (0)' }),
    ),
    score_min: Type.Optional(Type.Number({ description: 'Positions scored at least this' })),
    score_max: Type.Optional(Type.Number({ description: 'Positions scored at most this' })),
  },
  { additionalProperties: false },
);
export type ItemRule = Static<typeof ItemRule>;

export const AddItems = Type.Object(
  {
    task_logs: Ids('Task log ids'),
    sessions: Ids('Session ids'),
    tool_steps: Type.Optional(
      Type.Array(ToolStepRef, {
        maxItems: 1000,
        description: 'Tool steps (kind tool_step, ref `<session id>#<tool call id>`)',
      }),
    ),
    run_samples: Type.Optional(Type.Array(RunSampleRef, { maxItems: 1000 })),
    rules: Type.Optional(
      Type.Array(ItemRule, {
        maxItems: 10,
        description:
          'Each rule selects the positions of a run (or the calls a monitor scored) where all its criteria hold; the rules add up',
      }),
    ),
  },
  { additionalProperties: false },
);
export type AddItems = Static<typeof AddItems>;

export const ItemsAdded = Type.Object({
  object: Type.Literal('annotation_items.added'),
  added: Type.Integer({ minimum: 0 }),
  already_queued: Type.Integer({ minimum: 0 }),
});

export const Item = Type.Object({
  object: Type.Literal('annotation_item'),
  id: Type.String(),
  queue_id: Type.String(),
  kind: Type.String({ description: 'task_log, session, tool_step or run_sample' }),
  ref: Type.String({
    description:
      'What the item is: a task log or session id, `<session>#<tool call id>`, `<run>/<launch>/<position>`',
  }),
  run_id: Nullable(Type.String()),
  launch_index: Nullable(Type.Integer()),
  position: Nullable(Type.Integer()),
  source: Type.String(),
  state: Type.String(),
  reviewers_needed: Type.Integer(),
  reviews: Type.Integer(),
  flag: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type Item = Static<typeof Item>;
export const ItemList = ListOf(Item);

export const ListItemsQuery = Type.Object(
  {
    state: Type.Optional(Type.Enum([...ITEM_STATES])),
    ...PageQuery,
  },
  { additionalProperties: false },
);

const ErrorShape = Type.Object({ code: Type.String(), message: Type.String() });

const JudgeScore = Type.Object({
  evaluator_id: Type.String(),
  evaluator: Type.String({ description: "The evaluator's name" }),
  status: Type.String({ description: 'scored, error or missing: an error is never a pass' }),
  error: Nullable(ErrorShape),
  score: Nullable(Type.Number()),
  passed: Nullable(Type.Boolean()),
  reasoning: Nullable(Type.String()),
  label: Nullable(Type.String({ description: "A label grader's label" })),
  prompt_hash: Nullable(Type.String()),
});

/** What a reviewer sees: the item, what it refers to, and (unless hidden) the judges' verdicts. */
export const ItemView = Type.Object({
  object: Type.Literal('annotation_item.view'),
  item: Item,
  content: Type.Object({
    input: Type.Unknown(),
    output: Type.Unknown(),
    expected: Type.Unknown(),
    metadata: Type.Unknown(),
    /** Set when the recorded call (or a turn of the session) failed: its answer is no answer. */
    error: Nullable(ErrorShape),
  }),
  judge: Nullable(Type.Array(JudgeScore)),
  claim: Nullable(Type.Object({ reviewer: Type.String(), expires_at: Type.String() })),
});
export type ItemView = Static<typeof ItemView>;

export const ClaimQuery = Type.Object(
  {
    hide_judge: Type.Optional(
      Type.Boolean({
        description: "Leave the judges' scores out until the reviewer has scored (blind review)",
      }),
    ),
  },
  { additionalProperties: false },
);

export const ClaimResult = Type.Object({
  object: Type.Literal('annotation_claim'),
  item: Nullable(ItemView),
  remaining: Type.Integer({ minimum: 0, description: 'Open items this reviewer may still claim' }),
});

export const HumanScore = Type.Object(
  {
    evaluator: Type.String({ minLength: 1, maxLength: 300, description: 'A rubric evaluator (id or name)' }),
    score: Type.Optional(Type.Number({ description: 'ordinal and continuous scales (pass_fail: 0 or 1)' })),
    passed: Type.Optional(Type.Boolean({ description: 'pass_fail scales' })),
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'labels scales' })),
  },
  { additionalProperties: false },
);

export const SubmitReview = Type.Object(
  {
    scores: Type.Array(HumanScore, { minItems: 1, maxItems: 20 }),
    comment: Type.Optional(Nullable(Type.String({ maxLength: 20_000 }))),
  },
  { additionalProperties: false },
);
export type SubmitReview = Static<typeof SubmitReview>;

export const FlagBody = Type.Object(
  { reason: Type.String({ minLength: 1, maxLength: 2000 }) },
  { additionalProperties: false },
);

export const Review = Type.Object({
  object: Type.Literal('annotation_review'),
  id: Type.String(),
  queue_id: Type.String(),
  item_id: Type.String(),
  evaluator_id: Type.String(),
  reviewer: Type.String(),
  score: Nullable(Type.Number()),
  passed: Nullable(Type.Boolean()),
  label: Nullable(Type.String()),
  comment: Nullable(Type.String()),
  superseded_by: Nullable(Type.String()),
  created_at: Type.String(),
});
export type Review = Static<typeof Review>;
export const ReviewList = ListOf(Review);

export const ListReviewsQuery = Type.Object(
  {
    item: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    history: Type.Optional(Type.Boolean({ description: 'Include superseded reviews (corrections kept)' })),
    ...PageQuery,
  },
  { additionalProperties: false },
);

export const CorrectReview = Type.Object(
  {
    score: Type.Optional(Type.Number()),
    passed: Type.Optional(Type.Boolean()),
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    comment: Type.Optional(Nullable(Type.String({ maxLength: 20_000 }))),
  },
  { additionalProperties: false },
);
export type CorrectReview = Static<typeof CorrectReview>;

export const ItemDone = Type.Object({
  object: Type.Literal('annotation_item'),
  id: Type.String(),
  state: Type.String(),
  reviews: Type.Array(Review),
});

export const ExportBody = Type.Object(
  {
    label: Type.String({
      pattern: '^(?!ds_)[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$',
      description: 'Label of the new dataset',
    }),
    evaluator: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 300,
        description: "Whose human score is `expected` (the rubric's first)",
      }),
    ),
  },
  { additionalProperties: false },
);
