import { CONTENT_PERMISSION } from '../auth/content.js';
import { findContainer } from '../catalog/containers/repository.js';
import type { Range } from '../catalog/items.js';
import { countContainerLogs, readContainerLogItems } from '../catalog/logs/items.js';
import type { ReadSide } from '../engine/plan.js';
import { ApiError } from '../shared/errors.js';
import type { SourceKind } from './types.js';
import { refView } from './view.js';

const TYPE = 'container';

/** The side an omitted `sample` or `ground_truth` resolves to: the run's container's task logs. */
export function containerSide(containerId: string, range: Range): ReadSide {
  return { type: TYPE, ref: containerId, models: [], range };
}

/**
 * A container's task logs in `seq` order: input = request messages, output = response text, expected =
 * `metadata.expected`. A ground truth over the very same logs as the sample is no reference (a task log
 * is not the answer it should have given): scorers get no ground truth, so a code evaluator sees
 * `ground_truth=None`, and the sample keeps the log's own `expected`.
 */
export const containerSource: SourceKind = {
  type: TYPE,
  request: {
    fields: ['container'],
    async resolve(ctx, { projectId, name, body, range }) {
      const ref = String(body.container ?? '');
      const c = await findContainer(ctx.db, projectId, ref);
      if (!c)
        throw new ApiError('not_found', `Container '${ref}' not found`, {
          resource: 'container',
          ref,
          loc: ['body', name, 'container'],
        });
      return containerSide(c.id, range);
    },
  },
  reads: [{ permission: CONTENT_PERMISSION.task_log, what: "a container's task logs" }],
  recorded: true,
  selfIsNoReference: true,
  count: (db, side) => countContainerLogs(db, side.ref),
  read: (db, side, range) => readContainerLogItems(db, side.ref, range),
  view: refView('container', TYPE),
};
