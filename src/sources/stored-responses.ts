import { CONTENT_PERMISSION } from '../auth/content.js';
import { countDatasetItems, readEvalItems } from '../catalog/datasets/items.js';
import type { SourceKind } from './types.js';
import { refView } from './view.js';

/**
 * Stored responses (task logs of `/v1/responses` not made with `store: false`), selected by an OpenAI
 * eval run's `responses` source when it is created and read as eval rows. They are task logs: reading
 * them needs what reading task logs needs.
 */
export const storedResponsesSource: SourceKind = {
  type: 'stored_responses',
  reads: [{ permission: CONTENT_PERMISSION.task_log, what: 'stored responses (task logs)' }],
  eval: { sourceType: 'responses', rows: 'selected' },
  count: (db, side) => countDatasetItems(db, side.ref),
  read: (db, side, range) => readEvalItems(db, side.ref, range),
  view: refView('dataset', 'dataset'),
};
