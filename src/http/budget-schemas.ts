import { Type } from 'typebox';
import { BUDGET_PERIODS } from '../shared/budget.js';
import { Nullable } from './schemas.js';

/** A spend limit, as the key and project routes take and show it. */
export const BudgetSchema = Type.Object(
  {
    limit_usd: Type.Number({
      minimum: 0,
      maximum: 1_000_000_000,
      description: 'Most the scope may spend per period, in USD (0 stops every call)',
    }),
    period: Type.Union(
      BUDGET_PERIODS.map((p) => Type.Literal(p)),
      { description: '`day` and `month`: calendar periods in UTC; `total`: never resets' },
    ),
  },
  { additionalProperties: false, title: 'Budget' },
);

export const SpendSchema = Type.Object(
  {
    period_start: Type.String({ description: 'Start of the current period (the Unix epoch for `total`)' }),
    used_usd: Type.Number({ description: 'Spent in the current period, in USD' }),
    limit_usd: Type.Number(),
    resets_at: Nullable(
      Type.String({ description: 'When the spend starts again from zero; null for `total`' }),
    ),
  },
  { title: 'Spend' },
);

/** Budget and spend fields of a key or project view (null without a budget). */
export const BudgetFields = {
  budget: Nullable(BudgetSchema),
  spend: Nullable(SpendSchema),
};
