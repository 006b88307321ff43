import { z } from 'zod';
import { addItems } from '../../catalog/datasets/item-edits.js';
import { findDataset } from '../../catalog/datasets/repository.js';
import { CreateDataset } from '../../catalog/datasets/schemas.js';
import { createDataset } from '../../catalog/datasets/service.js';
import { NewItems } from '../../catalog/datasets/version-schemas.js';
import { checked } from '../body.js';
import { defineTool, links, type McpTool, seg } from '../tool.js';

const addItemsTool = defineTool({
  name: 'add_dataset_items',
  title: 'Add items to a dataset',
  description:
    'Adds items to a dataset as one new version (the items already there are kept), or, with create, makes the dataset when none has that label. Each item is what POST /v1/datasets/{dataset}/items takes: input, output, expected, metadata, splits, data, or `from` ({task_log}, {span}, {session} or {review}) to make it from a recorded call, a span, a session or a human review.',
  permission: 'data:write',
  readOnly: false,
  input: z
    .object({
      dataset: z.string().min(1).max(200).describe('Dataset id or label'),
      items: z
        .array(z.record(z.string(), z.unknown()))
        .min(1)
        .max(1000)
        .describe('The items to add, in order (JSON objects)'),
      create: z
        .boolean()
        .optional()
        .describe('Create the dataset (labelled `dataset`) when it does not exist'),
    })
    .strict(),
  async run(call, args) {
    const ctx = call.ports.datasets;
    const { projectId, keyId, permissions } = call.principal;
    const body = checked(NewItems, { items: args.items }, 'body');
    const existing = await findDataset(ctx.db, projectId, args.dataset);
    const created = existing === undefined && args.create === true;
    if (created) {
      await createDataset(ctx, projectId, checked(CreateDataset, { label: args.dataset, items: [] }, 'body'));
    }
    const change = await addItems(ctx, { projectId, keyId, permissions }, args.dataset, body.items, (i) => [
      'items',
      i,
    ]);
    return {
      summary: `${created ? 'Created' : 'Added to'} dataset ${args.dataset} (${change.dataset_id}): ${change.items.length} item(s) added as version ${change.version}, ${change.item_count} in all`,
      content: {
        dataset: {
          id: change.dataset_id,
          version: change.version,
          item_count: change.item_count,
          added: change.items.map((item) => item.id),
          created,
        },
        links: links(
          call,
          `datasets/${seg(change.dataset_id)}`,
          `/v1/datasets/${seg(change.dataset_id)}/items`,
        ),
      },
    };
  },
});

/** Datasets: items added as a new version, through the datasets' own edit operation. */
export const DATASET_TOOLS: readonly McpTool[] = [addItemsTool];
