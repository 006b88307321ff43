import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, PageQuery } from '../../http/schemas.js';
import { DatasetItem, SPLIT_PATTERN, SplitQueryField, VersionQueryField } from './schemas.js';

const Splits = Type.Array(Type.String({ pattern: SPLIT_PATTERN }), {
  maxItems: 32,
  uniqueItems: true,
  description: 'The named subsets the item is in (a run side may read one split)',
});
const ItemIdField = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^[^\\s]+$',
  description: "The item's id (default: made); unique among the dataset's current items",
});
const Any = (description: string) => Type.Unknown({ description });

/** Where an item is made from: a task log, a trace's span, a session or a human review. */
export const ItemFrom = Type.Union(
  [
    Type.Object(
      { task_log_id: Type.String({ minLength: 1, maxLength: 200 }) },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        span_id: Type.String({ pattern: '^[0-9a-fA-F]{16}$|^[A-Za-z0-9_-]{1,200}$' }),
        trace_id: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{32}$' })),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      { session_id: Type.String({ minLength: 1, maxLength: 300 }) },
      { additionalProperties: false },
    ),
    Type.Object(
      { review_id: Type.String({ minLength: 1, maxLength: 200 }) },
      { additionalProperties: false },
    ),
  ],
  {
    description:
      'Make the item from a task log (input: its request messages, output: its answer, expected: its metadata.expected), a span (a model call: as its task log; another span: its input and output attributes), a session (input: the first user message, expected: the final answer, expected_tool_calls: its tool calls) or a review (input and output of the reviewed item, expected: the human answer); fields given beside it override',
  },
);
export type ItemFrom = Static<typeof ItemFrom>;

export const NewItem = Type.Object(
  {
    id: Type.Optional(ItemIdField),
    input: Type.Optional(Any('The input (any JSON)')),
    output: Type.Optional(Any('An output (any JSON)')),
    expected: Type.Optional(Any('The expected answer (any JSON)')),
    metadata: Type.Optional(FreeObject()),
    splits: Type.Optional(Splits),
    data: Type.Optional(FreeObject('Other fields of the row, kept as given (e.g. expected_tool_calls)')),
    from: Type.Optional(ItemFrom),
  },
  { additionalProperties: false },
);
export type NewItem = Static<typeof NewItem>;

export const NewItems = Type.Object(
  { items: Type.Array(NewItem, { minItems: 1, maxItems: 1000 }) },
  { additionalProperties: false },
);
export type NewItems = Static<typeof NewItems>;

export const PatchItem = Type.Object(
  {
    input: Type.Optional(Any('The input (any JSON)')),
    output: Type.Optional(Any('An output (any JSON)')),
    expected: Type.Optional(Any('The expected answer (any JSON)')),
    metadata: Type.Optional(FreeObject()),
    splits: Type.Optional(Splits),
    data: Type.Optional(FreeObject('Other fields of the row to set (merged into it)')),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type PatchItem = Static<typeof PatchItem>;

export const ItemParams = Type.Object({
  dataset: Type.String({ minLength: 1, maxLength: 200, description: 'Dataset id or label' }),
  item_id: Type.String({ minLength: 1, maxLength: 200, description: "The item's id" }),
});

/** What a change made: the new version and the items it wrote. */
export const ItemsChanged = Type.Object({
  object: Type.Literal('dataset.change'),
  dataset_id: Type.String(),
  version: Type.Integer({ minimum: 1, description: 'The version the change made' }),
  item_count: Type.Integer({ minimum: 0, description: 'Items of that version' }),
  items: Type.Array(DatasetItem, { description: 'The items written (added or new versions)' }),
});
export type ItemsChanged = Static<typeof ItemsChanged>;

export const ItemDeleted = Type.Object({
  object: Type.Literal('dataset.item'),
  id: Type.String(),
  deleted: Type.Literal(true),
  dataset_id: Type.String(),
  version: Type.Integer({ minimum: 1, description: 'The version the removal made' }),
});

export const DatasetVersion = Type.Object({
  object: Type.Literal('dataset.version'),
  dataset_id: Type.String(),
  version: Type.Integer({ minimum: 1 }),
  item_count: Type.Integer({ minimum: 0 }),
  added: Type.Integer({ minimum: 0 }),
  changed: Type.Integer({ minimum: 0 }),
  removed: Type.Integer({ minimum: 0 }),
  created_by: Type.Union([Type.String(), Type.Null()], { description: 'The API key that made it' }),
  created_at: Type.String(),
});
export type DatasetVersion = Static<typeof DatasetVersion>;

export const DatasetVersionList = ListOf(DatasetVersion);
export const ListVersionsQuery = Type.Object(PageQuery);

export const DiffQuery = Type.Object({
  from: VersionQueryField,
  to: Type.Optional(VersionQueryField),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 10_000, default: 1000, description: 'Entries of each kind at most' }),
  ),
});

export const ChangedItem = Type.Object({
  id: Type.String(),
  before: DatasetItem,
  after: DatasetItem,
});

export const DatasetDiff = Type.Object({
  object: Type.Literal('dataset.diff'),
  dataset_id: Type.String(),
  from_version: Type.Integer({ minimum: 1 }),
  to_version: Type.Integer({ minimum: 1 }),
  added: Type.Array(DatasetItem),
  removed: Type.Array(DatasetItem),
  changed: Type.Array(ChangedItem),
  truncated: Type.Boolean({ description: 'True when more entries than `limit` differ' }),
});
export type DatasetDiff = Static<typeof DatasetDiff>;

export const ExportQuery = Type.Object({
  version: Type.Optional(VersionQueryField),
  split: Type.Optional(SplitQueryField),
  format: Type.Optional(
    Type.Enum(['jsonl', 'csv'], {
      default: 'jsonl',
      description:
        'jsonl: one row a line (its fields, `id` and `splits`); csv: columns id, input, output, expected, metadata, splits (values that are not strings as JSON)',
    }),
  ),
});
export type ItemDeleted = Static<typeof ItemDeleted>;
