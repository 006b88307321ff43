import { type Static, Type } from 'typebox';
import { Nullable } from '../../http/schemas.js';

// The figures' schema apart from their computation (figures.ts): the statistics thread loads the
// computation alone, not the schema library.

const Interval = Nullable(Type.Array(Type.Number(), { minItems: 2, maxItems: 2 }));

export const Figures = Type.Object({
  prompt_hash: Nullable(
    Type.String({ description: 'The judge prompt that scored these pairs (null: unknown)' }),
  ),
  n: Type.Integer({ minimum: 0, description: 'Pairs' }),
  percent_agreement: Nullable(Type.Number({ description: 'Share of pairs with the same answer' })),
  kappa: Nullable(
    Type.Number({ description: "Cohen's κ over pass/fail or labels (ordinal: over the grades)" }),
  ),
  weighted_kappa: Nullable(Type.Number({ description: 'Quadratically weighted κ (ordinal scales)' })),
  pearson: Nullable(Type.Number()),
  spearman: Nullable(Type.Number()),
  mae: Nullable(Type.Number({ description: 'Mean absolute error of the scores' })),
  confusion: Nullable(
    Type.Object({
      labels: Type.Array(Type.Union([Type.String(), Type.Number()])),
      matrix: Type.Array(Type.Array(Type.Integer()), { description: 'Rows: the judge; columns: the person' }),
    }),
  ),
  intervals: Type.Object(
    {
      percent_agreement: Interval,
      kappa: Interval,
      weighted_kappa: Interval,
      pearson: Interval,
      spearman: Interval,
      mae: Interval,
    },
    { description: '95 % percentile bootstrap intervals (seeded)' },
  ),
  disagreements: Type.Array(
    Type.Object({ item_id: Type.String(), judge: Type.Unknown(), human: Type.Unknown() }),
    { description: 'The first pairs that disagree (at most 20)' },
  ),
});
export type Figures = Static<typeof Figures>;
