import { z } from 'zod';
import { findDataset } from '../../catalog/datasets/repository.js';
import { AppendItems, CreateDataset } from '../../catalog/datasets/schemas.js';
import { appendItems, createDataset } from '../../catalog/datasets/service.js';
import { checked } from '../body.js';
import { defineTool, links, type McpTool, seg } from '../tool.js';

const addItemsTool = defineTool({
  name: 'add_dataset_items',
  title: 'Add items to a dataset',
  description:
    "Adds rows at the end of a dataset (the rows there keep their positions), or, with create, makes the dataset when none has that label. A row's input, output and expected fields are the canonical ones; the rest is kept.",
  permission: 'data:write',
  readOnly: false,
  input: z
    .object({
      dataset: z.string().min(1).max(200).describe('Dataset id or label'),
      items: z
        .array(z.record(z.string(), z.unknown()))
        .min(1)
        .max(10_000)
        .describe('The rows to add, in order (JSON objects)'),
      create: z
        .boolean()
        .optional()
        .describe('Create the dataset (labelled `dataset`) when it does not exist'),
    })
    .strict(),
  async run(call, args) {
    const { db } = call.ports.datasets;
    const { projectId } = call.principal;
    const existing = await findDataset(db, projectId, args.dataset);
    const dataset =
      existing === undefined && args.create === true
        ? await createDataset(
            call.ports.datasets,
            projectId,
            checked(CreateDataset, { label: args.dataset, items: args.items }, 'body'),
          )
        : await appendItems(db, projectId, args.dataset, checked(AppendItems, { items: args.items }, 'body'));
    const created = existing === undefined;
    return {
      summary: `${created ? 'Created' : 'Added to'} dataset ${dataset.label} (${dataset.id}): ${args.items.length} row(s) added, ${dataset.item_count} in all`,
      content: {
        dataset: {
          id: dataset.id,
          label: dataset.label,
          item_count: dataset.item_count,
          added: args.items.length,
          created,
        },
        links: links(call, `datasets/${seg(dataset.id)}`, `/v1/datasets/${seg(dataset.id)}/items`),
      },
    };
  },
});

/** Datasets; prompt tools (get and create prompt versions) take a file of their own beside this one. */
export const DATASET_TOOLS: readonly McpTool[] = [addItemsTool];
