import { type Static, Type } from 'typebox';
import { Nullable } from '../http/schemas.js';

export const SETTLE_METHODS = ['majority', 'review', 'value'] as const;

export const SettleItem = Type.Object(
  {
    evaluator: Type.Optional(
      Type.String({ minLength: 1, maxLength: 300, description: "The rubric evaluator (the rubric's first)" }),
    ),
    method: Type.Enum([...SETTLE_METHODS], {
      description:
        'majority: the answer most reviewers gave (409 on a tie); review: the answer of the review named; value: the answer given here',
    }),
    review: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'With method review' })),
    score: Type.Optional(Type.Number({ description: 'With method value, on a numeric scale' })),
    passed: Type.Optional(Type.Boolean({ description: 'With method value, on a pass/fail scale' })),
    label: Type.Optional(
      Type.String({ maxLength: 200, description: 'With method value, on a labels scale' }),
    ),
    comment: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
  },
  { additionalProperties: false },
);
export type SettleItem = Static<typeof SettleItem>;

export const Settlement = Type.Object({
  object: Type.Literal('annotation_settlement'),
  id: Type.String(),
  queue_id: Type.String(),
  item_id: Type.String(),
  evaluator_id: Type.String(),
  evaluator: Type.String(),
  score: Nullable(Type.Number()),
  passed: Nullable(Type.Boolean()),
  label: Nullable(Type.String()),
  method: Type.String({ description: 'majority, review or value' }),
  review_id: Nullable(Type.String()),
  comment: Nullable(Type.String()),
  settled_by: Type.String({ description: 'The reviewer id of whoever settled it' }),
  created_at: Type.String(),
});

export const SettleQueue = Type.Object(
  {
    evaluator: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
    method: Type.Literal('majority', { description: 'Every open disagreement by majority (ties stay open)' }),
  },
  { additionalProperties: false },
);
export type SettleQueue = Static<typeof SettleQueue>;

export const QueueSettled = Type.Object({
  object: Type.Literal('annotation_queue.settled'),
  queue_id: Type.String(),
  evaluator_id: Type.String(),
  settled: Type.Integer({ minimum: 0, description: 'Disagreements settled now' }),
  ties: Type.Integer({ minimum: 0, description: 'Disagreements left open: no majority' }),
});

export const ExportScoresQuery = Type.Object(
  {
    format: Type.Optional(
      Type.Enum(['jsonl', 'csv'], {
        description:
          'jsonl (default): one line per item and evaluator, every review in it; csv: one row per review',
      }),
    ),
    evaluator: Type.Optional(
      Type.String({ minLength: 1, maxLength: 300, description: 'One rubric evaluator (all by default)' }),
    ),
  },
  { additionalProperties: false },
);
export type ExportScoresQuery = Static<typeof ExportScoresQuery>;
