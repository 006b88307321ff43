import { CONTENT_PERMISSION } from '../auth/content.js';
import { countDatasetItems, readEvalItems } from '../catalog/datasets/items.js';
import type { SourceKind } from './types.js';
import { refView } from './view.js';

/**
 * Stored chat completions (chat calls recorded with `store: true`), selected by an OpenAI eval run's
 * filters when it is created and read as eval rows (`item`: the request, `sample`: the answer). They are
 * task logs: reading them needs what reading task logs needs.
 */
export const storedCompletionsSource: SourceKind = {
  type: 'stored_completions',
  reads: [{ permission: CONTENT_PERMISSION.task_log, what: 'stored chat completions (task logs)' }],
  eval: { sourceType: 'stored_completions', rows: 'selected' },
  count: (db, side) => countDatasetItems(db, side.ref),
  read: (db, side, range) => readEvalItems(db, side.ref, range),
  view: refView('dataset', 'dataset'),
};
