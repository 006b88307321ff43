import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requireNeeds } from '../auth/content.js';
import { principalOf } from '../auth/guard.js';
import { reviewerOf } from '../auth/reviewer.js';
import { Dataset } from '../catalog/datasets/schemas.js';
import { pageOf, responses } from '../http/schemas.js';
import { ApiError } from '../shared/errors.js';
import { itemNeeds, queueNeeds } from './content.js';
import { exportReviewed } from './export.js';
import { claimFor, itemFor, reviewItem, setAside } from './flow.js';
import { addItems, listItems, requireItem } from './items.js';
import type { ReviewPorts } from './ports.js';
import { queueRubric, type RubricEvaluator, requireQueue } from './queues.js';
import { correctReview, listReviews, requireReview } from './reviews.js';
import {
  AddItems,
  ClaimQuery,
  ClaimResult,
  CorrectReview,
  ExportBody,
  FlagBody,
  ItemDone,
  ItemList,
  ItemParam,
  ItemsAdded,
  ItemView,
  ListItemsQuery,
  ListReviewsQuery,
  QueueParam,
  Review,
  ReviewList,
  SubmitReview,
} from './schemas.js';

const tags = ['review'];
const ReviewRefParam = Type.Object({
  queue: Type.String({ minLength: 1, maxLength: 300, description: 'Queue id or name' }),
  review: Type.String({ minLength: 1, maxLength: 100, description: 'Review id' }),
});

function rubricEvaluator(
  rubric: RubricEvaluator[],
  ref: string | undefined,
  loc: (string | number)[],
): RubricEvaluator {
  const ev = ref === undefined ? rubric[0] : rubric.find((e) => e.id === ref || e.name === ref);
  if (!ev) throw ApiError.invalid(loc, `Evaluator '${ref}' is not in the queue's rubric`);
  return ev;
}

type ReviewApp = Parameters<FastifyPluginAsyncTypebox<{ ports: ReviewPorts }>>[0];

/** Skipping a claimed item (back to the others) or flagging it (out of the queue, with the reason). */
function skipAndFlagRoutes(app: ReviewApp, db: ReviewPorts['db']): void {
  for (const action of ['skip', 'flag'] as const) {
    app.post(
      `/v1/annotation-queues/:queue/items/:item/${action}`,
      {
        config: { permission: 'review:write' },
        schema: {
          tags,
          summary:
            action === 'skip'
              ? 'Skip a claimed item: it goes back to the others, never to this reviewer again'
              : 'Flag a claimed item (a broken or unreviewable case): it leaves the queue, with the reason',
          params: ItemParam,
          ...(action === 'flag' ? { body: FlagBody } : {}),
          response: responses(
            {
              200: Type.Object({
                object: Type.Literal('annotation_item'),
                id: Type.String(),
                state: Type.String(),
              }),
            },
            404,
            409,
            413,
            415,
            422,
          ),
        },
      },
      async (req) => {
        const principal = principalOf(req);
        const queue = await requireQueue(db, principal.projectId, req.params.queue);
        const reviewer = await reviewerOf(db, principal);
        const reason = action === 'flag' ? (req.body as { reason: string }).reason : null;
        const after = await setAside(db, queue, req.params.item, reviewer, reason);
        return { object: 'annotation_item' as const, ...after };
      },
    );
  }
}

/** A queue's reviews: listed, corrected, and exported as a dataset. */
function reviewRoutes(app: ReviewApp, { db, sourceKinds }: ReviewPorts): void {
  app.get(
    '/v1/annotation-queues/:queue/reviews',
    {
      config: { permission: 'review:read' },
      schema: {
        tags,
        summary: "A page of a queue's human reviews (current ones; with history=true, corrected ones too)",
        params: QueueParam,
        querystring: ListReviewsQuery,
        response: responses({ 200: ReviewList }, 404, 422),
      },
    },
    async (req) => {
      const queue = await requireQueue(db, principalOf(req).projectId, req.params.queue);
      const { item, history } = req.query;
      return listReviews(db, queue, { item, history }, pageOf(req.query));
    },
  );

  app.post(
    '/v1/annotation-queues/:queue/reviews/:review/correct',
    {
      config: { permission: 'review:write' },
      schema: {
        tags,
        summary: 'Correct a review: a new review replaces it, the old one is kept as history',
        params: ReviewRefParam,
        body: CorrectReview,
        response: responses({ 201: Review }, 404, 409, 413, 415, 422),
      },
    },
    async (req, reply) => {
      const principal = principalOf(req);
      const queue = await requireQueue(db, principal.projectId, req.params.queue);
      const current = await requireReview(db, queue, req.params.review);
      const reviewer = await reviewerOf(db, principal);
      return reply
        .code(201)
        .send(await correctReview(db, await queueRubric(db, queue), current, reviewer, req.body));
    },
  );

  app.post(
    '/v1/annotation-queues/:queue/export',
    {
      config: { permission: 'review:write' },
      schema: {
        tags,
        summary:
          "Export reviewed items as a dataset: the human answer as expected, the review's comment kept (also needs data:write)",
        params: QueueParam,
        body: ExportBody,
        response: responses({ 201: Dataset }, 404, 409, 413, 415, 422),
      },
    },
    async (req, reply) => {
      const principal = principalOf(req);
      requireNeeds(principal.permissions, [
        { permission: 'data:write', why: 'the export creates a dataset' },
      ]);
      const queue = await requireQueue(db, principal.projectId, req.params.queue);
      // The dataset holds the items' content: what showing them needs.
      requireNeeds(principal.permissions, await queueNeeds(db, sourceKinds, queue.id));
      const ev = rubricEvaluator(await queueRubric(db, queue), req.body.evaluator, ['body', 'evaluator']);
      return reply.code(201).send(await exportReviewed(db, queue, ev, req.body.label));
    },
  );
}

/** A queue's items: adding them, claiming, reviewing, skipping, flagging, correcting, exporting. */
export const itemRoutes: FastifyPluginAsyncTypebox<{ ports: ReviewPorts }> = async (app, { ports }) => {
  const { db, sourceKinds } = ports;

  app.post(
    '/v1/annotation-queues/:queue/items',
    {
      config: { permission: 'review:write' },
      schema: {
        tags,
        summary: "Add items by id (task logs, sessions, a run's positions) or by rules over a run's scores",
        params: QueueParam,
        body: AddItems,
        response: responses({ 200: ItemsAdded }, 404, 413, 415, 422),
      },
    },
    async (req) => {
      const queue = await requireQueue(db, principalOf(req).projectId, req.params.queue);
      const rubric = await queueRubric(db, queue);
      const resolve = async (ref: string, loc: (string | number)[]) => rubricEvaluator(rubric, ref, loc).id;
      const r = await addItems(
        ports,
        queue,
        rubric[0]?.id ?? '',
        resolve,
        req.body,
        principalOf(req).permissions,
      );
      return { object: 'annotation_items.added' as const, ...r };
    },
  );

  app.get(
    '/v1/annotation-queues/:queue/items',
    {
      config: { permission: 'review:read' },
      schema: {
        tags,
        summary: "A page of a queue's items in the order they were added, optionally of one state",
        params: QueueParam,
        querystring: ListItemsQuery,
        response: responses({ 200: ItemList }, 404, 422),
      },
    },
    async (req) => {
      const principal = principalOf(req);
      const queue = await requireQueue(db, principal.projectId, req.params.queue);
      requireNeeds(principal.permissions, await queueNeeds(db, sourceKinds, queue.id));
      return listItems(db, queue, req.query.state, pageOf(req.query));
    },
  );

  app.get(
    '/v1/annotation-queues/:queue/items/:item',
    {
      config: { permission: 'review:read' },
      schema: {
        tags,
        summary:
          "An item as a reviewer sees it: its content and the judges' verdicts (hidden until scored on request)",
        params: ItemParam,
        querystring: Type.Object(
          { hide_judge: Type.Optional(Type.Boolean()) },
          { additionalProperties: false },
        ),
        response: responses({ 200: ItemView }, 404, 422),
      },
    },
    async (req) => {
      const principal = principalOf(req);
      const queue = await requireQueue(db, principal.projectId, req.params.queue);
      const item = await requireItem(db, queue, req.params.item);
      requireNeeds(principal.permissions, await itemNeeds(db, sourceKinds, item));
      const reviewer = await reviewerOf(db, principal);
      return itemFor(db, queue, item, reviewer, req.query.hide_judge ?? false);
    },
  );

  app.post(
    '/v1/annotation-queues/:queue/claim',
    {
      config: { permission: 'review:write' },
      schema: {
        tags,
        summary: 'Claim the next item to review (one never seen by this reviewer); the claim expires',
        params: QueueParam,
        querystring: ClaimQuery,
        response: responses({ 200: ClaimResult }, 404, 422),
      },
    },
    async (req) => {
      const principal = principalOf(req);
      const queue = await requireQueue(db, principal.projectId, req.params.queue);
      // Checked before claiming: a claim the caller may not read would hold the item from others.
      requireNeeds(principal.permissions, await queueNeeds(db, sourceKinds, queue.id));
      const reviewer = await reviewerOf(db, principal);
      const claim = await claimFor(db, queue, reviewer, req.query.hide_judge ?? false);
      return { object: 'annotation_claim' as const, ...claim };
    },
  );

  app.post(
    '/v1/annotation-queues/:queue/items/:item/review',
    {
      config: { permission: 'review:write' },
      schema: {
        tags,
        summary: "Submit a review: a human score on each rubric evaluator's scale (and a comment)",
        params: ItemParam,
        body: SubmitReview,
        response: responses({ 201: ItemDone }, 404, 409, 413, 415, 422),
      },
    },
    async (req, reply) => {
      const principal = principalOf(req);
      const queue = await requireQueue(db, principal.projectId, req.params.queue);
      const reviewer = await reviewerOf(db, principal);
      const done = await reviewItem(db, queue, req.params.item, reviewer, req.body);
      return reply.code(201).send({ object: 'annotation_item' as const, ...done });
    },
  );

  skipAndFlagRoutes(app, db);

  reviewRoutes(app, ports);
};
