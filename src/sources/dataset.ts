import { countPinnedItems, type DatasetPin, readDatasetItems } from '../catalog/datasets/items.js';
import { countVersion } from '../catalog/datasets/versions-repository.js';
import type { ReadSide } from '../engine/plan.js';
import { formatRange } from '../engine/plan.js';
import { ApiError } from '../shared/errors.js';
import type { SourceKind } from './types.js';

/** The version (and split) a side reads: fixed when the run was created; plans from before versions: 1. */
export function pinOf(side: ReadSide): DatasetPin {
  const f = side.filter ?? {};
  const version = typeof f.version === 'number' ? f.version : 1;
  return { version, split: typeof f.split === 'string' ? f.split : null };
}

function notFound(ref: string, loc: (string | number)[]): ApiError {
  return new ApiError('not_found', `Dataset '${ref}' not found`, { resource: 'dataset', ref, loc });
}

/**
 * A dataset's items (`input`, `output`, `expected`, `metadata`), in the dataset's order. The side reads
 * one version of the dataset (`version`; omitted: the latest when the run is created) and optionally one
 * split of it; both are fixed in the run's plan, so that the run, resumed or retried, reads the same items
 * whatever is changed in the dataset meanwhile.
 */
export const datasetSource: SourceKind = {
  type: 'dataset',
  request: {
    fields: ['dataset'],
    optional: ['version', 'split'],
    async resolve(ctx, { projectId, name, body, range }) {
      const ref = String(body.dataset ?? '');
      const ds = await ctx.findDataset(projectId, ref);
      if (!ds) throw notFound(ref, ['body', name, 'dataset']);
      const latest = ds.version ?? 1;
      const version = typeof body.version === 'number' ? body.version : latest;
      if (version > latest) {
        throw new ApiError(
          'not_found',
          `Dataset '${ref}' has no version ${version} (its latest is ${latest})`,
          { resource: 'dataset_version', ref: `${ref}@${version}`, loc: ['body', name, 'version'] },
        );
      }
      const filter: Record<string, unknown> = { version };
      if (typeof body.split === 'string') {
        filter.split = body.split;
        if ((await countVersion(ctx.db, ds.id, version, body.split)) === 0) {
          throw new ApiError(
            'not_found',
            `Dataset '${ref}' version ${version} has no item in the split '${body.split}'`,
            { resource: 'dataset_split', ref: body.split, loc: ['body', name, 'split'] },
          );
        }
      }
      return { type: 'dataset', ref: ds.id, models: [], range, filter };
    },
  },
  reads: [{ permission: 'data:read', what: 'a dataset' }],
  count: (db, side) => countPinnedItems(db, side.ref, pinOf(side)),
  read: (db, side, range) => readDatasetItems(db, side.ref, range, pinOf(side)),
  view(side) {
    const view = { type: 'dataset', dataset: side.ref ?? '', range: formatRange(side.range) };
    if (side.ref === null) return view;
    const pin = pinOf(side);
    return { ...view, version: pin.version, ...(pin.split ? { split: pin.split } : {}) };
  },
};
