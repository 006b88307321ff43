import { countDatasetItems, readDatasetItems } from '../catalog/datasets/items.js';
import { ApiError } from '../shared/errors.js';
import type { SourceKind } from './types.js';
import { refView } from './view.js';

/** A dataset's rows (`input`, `output`, `expected`, `metadata`), by position. */
export const datasetSource: SourceKind = {
  type: 'dataset',
  request: {
    fields: ['dataset'],
    async resolve(ctx, { projectId, name, body, range }) {
      const ref = String(body.dataset ?? '');
      const ds = await ctx.findDataset(projectId, ref);
      if (!ds)
        throw new ApiError('not_found', `Dataset '${ref}' not found`, {
          resource: 'dataset',
          ref,
          loc: ['body', name, 'dataset'],
        });
      return { type: 'dataset', ref: ds.id, models: [], range };
    },
  },
  reads: [{ permission: 'data:read', what: 'a dataset' }],
  count: (db, side) => countDatasetItems(db, side.ref),
  read: (db, side, range) => readDatasetItems(db, side.ref, range),
  view: refView('dataset', 'dataset'),
};
