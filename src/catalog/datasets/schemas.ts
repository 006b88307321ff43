import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, Nullable, PageQuery } from '../../http/schemas.js';

export const DATASET_LABEL_PATTERN = '^(?!ds_)[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$';

const Label = Type.String({
  pattern: DATASET_LABEL_PATTERN,
  description: 'Unique in the project; letters, digits, . _ : -, up to 128 characters, not starting with ds_',
});
const Description = Type.String({ maxLength: 10_000 });

export const RANGE_PATTERN = '^\\d+:\\d+$';

/** A dataset split's name: letters, digits, . _ : -, up to 64 characters. */
export const SPLIT_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$';

export const Dataset = Type.Object({
  object: Type.Literal('dataset'),
  id: Type.String(),
  project_id: Type.String(),
  label: Type.String(),
  description: Nullable(Type.String()),
  metadata: FreeObject(),
  item_count: Type.Integer({ minimum: 0, description: 'Items of the latest version' }),
  version: Type.Integer({ minimum: 1, description: 'The latest version (1: as created)' }),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type Dataset = Static<typeof Dataset>;

export const CreateDataset = Type.Object(
  {
    label: Label,
    description: Type.Optional(Nullable(Description)),
    metadata: Type.Optional(Nullable(FreeObject())),
    items: Type.Array(
      FreeObject('A row; its input, output and expected fields are the canonical ones, the rest is kept'),
      { description: 'The rows, in order' },
    ),
  },
  { additionalProperties: false },
);
export type CreateDataset = Static<typeof CreateDataset>;

/** For JSON-lines uploads, where the body is the rows. */
export const UploadDatasetQuery = Type.Object({
  label: Type.Optional(Label),
  description: Type.Optional(Description),
});

export const PatchDataset = Type.Object(
  {
    label: Type.Optional(Label),
    description: Type.Optional(Nullable(Description)),
    metadata: Type.Optional(Nullable(FreeObject())),
  },
  { additionalProperties: false },
);
export type PatchDataset = Static<typeof PatchDataset>;

export const DatasetList = ListOf(Dataset);
export const ListDatasetsQuery = Type.Object(PageQuery);

export const DatasetRefParam = Type.Object({
  dataset: Type.String({ minLength: 1, maxLength: 200, description: 'Dataset id or label' }),
});
export const DatasetIdParam = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 200, description: 'Dataset id' }),
});
export const DatasetDeleted = Type.Object({
  object: Type.Literal('dataset'),
  id: Type.String(),
  deleted: Type.Literal(true),
});

export const DatasetItem = Type.Object({
  object: Type.Literal('dataset.item'),
  position: Type.Integer({ minimum: 0, description: '0-based position in the dataset' }),
  id: Type.String({
    description:
      "The item's id: given or made when it was added, else the row's own id field, or <dataset id>:<position>",
  }),
  data: FreeObject('The row as uploaded'),
  splits: Type.Optional(
    Type.Array(Type.String(), { description: 'The splits the item is in (absent: none)' }),
  ),
  origin: Type.Optional(FreeObject('What the item was made from: {kind, id, …}')),
});
export type DatasetItem = Static<typeof DatasetItem>;

export const DatasetItemList = ListOf(DatasetItem);

export const VersionQueryField = Type.Integer({
  minimum: 1,
  maximum: 2_147_483_647,
  description: 'A version of the dataset (default: the latest)',
});
export const SplitQueryField = Type.String({
  pattern: SPLIT_PATTERN,
  description: 'Only the items of this split',
});

export const ListItemsQuery = Type.Object({
  ...PageQuery,
  version: Type.Optional(VersionQueryField),
  split: Type.Optional(SplitQueryField),
  range: Type.Optional(
    Type.String({
      pattern: RANGE_PATTERN,
      description:
        'start:end, 0-based, end exclusive (places in the version read); limit and offset then page within it',
    }),
  ),
});
