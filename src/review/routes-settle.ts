import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requireNeeds } from '../auth/content.js';
import { principalOf } from '../auth/guard.js';
import { reviewerOf } from '../auth/reviewer.js';
import { responses } from '../http/schemas.js';
import { ApiError } from '../shared/errors.js';
import { queueNeeds } from './content.js';
import { exportLines } from './export-scores.js';
import { requireItem } from './items.js';
import type { ReviewPorts } from './ports.js';
import { queueRubric, type RubricEvaluator, requireQueue } from './queues.js';
import { ItemParam, QueueParam } from './schemas.js';
import { ExportScoresQuery, QueueSettled, SettleItem, Settlement, SettleQueue } from './schemas-settle.js';
import { settleByMajority, settleItem, toSettlement } from './settle.js';

const tags = ['review'];

function rubricEvaluator(rubric: RubricEvaluator[], ref: string | undefined, loc: string[]): RubricEvaluator {
  const ev = ref === undefined ? rubric[0] : rubric.find((e) => e.id === ref || e.name === ref);
  if (!ev) throw ApiError.invalid(loc, `Evaluator '${ref}' is not in the queue's rubric`);
  return ev;
}

/** Settling reviewers' disagreements (review:admin) and exporting every human score (JSON lines or CSV). */
export const settleRoutes: FastifyPluginAsyncTypebox<{ ports: ReviewPorts }> = async (app, { ports }) => {
  const { db } = ports;

  app.post(
    '/v1/annotation-queues/:queue/items/:item/settle',
    {
      config: { permission: 'review:admin' },
      schema: {
        tags,
        summary:
          "Settle an item's answer on an evaluator: the majority's, one review's, or a value (replaces an earlier settlement)",
        params: ItemParam,
        body: SettleItem,
        response: responses({ 201: Settlement }, 404, 409, 413, 415, 422),
      },
    },
    async (req, reply) => {
      const principal = principalOf(req);
      const queue = await requireQueue(db, principal.projectId, req.params.queue);
      const item = await requireItem(db, queue, req.params.item);
      const ev = rubricEvaluator(await queueRubric(db, queue), req.body.evaluator, ['body', 'evaluator']);
      const by = await reviewerOf(db, principal);
      const row = await settleItem(db, queue, ev, item, by, req.body);
      return reply.code(201).send(toSettlement(row, ev));
    },
  );

  app.post(
    '/v1/annotation-queues/:queue/settle',
    {
      config: { permission: 'review:admin' },
      schema: {
        tags,
        summary: 'Settle every open disagreement of a queue on an evaluator by majority (ties stay open)',
        params: QueueParam,
        body: SettleQueue,
        response: responses({ 200: QueueSettled }, 404, 413, 415, 422),
      },
    },
    async (req) => {
      const principal = principalOf(req);
      const queue = await requireQueue(db, principal.projectId, req.params.queue);
      const ev = rubricEvaluator(await queueRubric(db, queue), req.body.evaluator, ['body', 'evaluator']);
      const r = await settleByMajority(db, queue, ev, await reviewerOf(db, principal));
      return { object: 'annotation_queue.settled' as const, queue_id: queue.id, evaluator_id: ev.id, ...r };
    },
  );

  app.get(
    '/v1/annotation-queues/:queue/scores',
    {
      config: { permission: 'review:read' },
      schema: {
        tags,
        summary:
          "Export the queue's human scores: every reviewer's answer and comment, and the settled answer (JSON lines or CSV)",
        params: QueueParam,
        querystring: ExportScoresQuery,
        response: responses(
          {
            200: Type.String({
              description:
                'application/x-ndjson (one item and evaluator a line) or text/csv (one review a row)',
            }),
          },
          404,
          422,
        ),
      },
    },
    async (req, reply) => {
      const principal = principalOf(req);
      const queue = await requireQueue(db, principal.projectId, req.params.queue);
      // The export names the items' sources: what reading the queue's items needs.
      requireNeeds(principal.permissions, await queueNeeds(db, ports.sourceKinds, queue.id));
      const rubric = await queueRubric(db, queue);
      const evaluators =
        req.query.evaluator === undefined
          ? rubric
          : [rubricEvaluator(rubric, req.query.evaluator, ['query', 'evaluator'])];
      const format = req.query.format ?? 'jsonl';
      const ext = format === 'csv' ? 'csv' : 'jsonl';
      return reply
        .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson')
        .header('content-disposition', `attachment; filename="${queue.id}-scores.${ext}"`)
        .send(Readable.from(exportLines(db, queue, evaluators, format)));
    },
  );
};
