import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { PageQuery, pageOf } from '../http/schemas.js';
import { exportLines } from '../review/export-scores.js';
import { addItems } from '../review/items.js';
import { createQueue, queueRubric, requireQueue } from '../review/queues.js';
import { correctReview, listReviews, requireReview } from '../review/reviews.js';
import { AddItems, CorrectReview, CreateQueue } from '../review/schemas.js';
import { ExportScoresQuery } from '../review/schemas-settle.js';
import { ApiError } from '../shared/errors.js';
import {
  DASHBOARD_API,
  type DashboardContext,
  MEMBER_PERMISSIONS,
  projectOf,
  userOf,
  type WithSession,
} from './context.js';
import { ProjectParam } from './project-routes.js';
import { reviewerOfUser } from './review-routes.js';

const QueueParam = Type.Object({
  ...ProjectParam.properties,
  queue: Type.String({ minLength: 1, maxLength: 300 }),
});
const ReviewParam = Type.Object({
  ...QueueParam.properties,
  review: Type.String({ minLength: 1, maxLength: 100 }),
});

/**
 * Managing human review from the dashboard, with the API's own services and rules: creating a queue,
 * adding items (task logs, a run's positions, rules over a run's scores), exporting its human scores
 * (JSON lines or CSV), and listing and correcting the signed-in user's own reviews. A member has every
 * right in the organization's projects (as a `*` key); anyone else gets 404, and another project's queue
 * is not found.
 */
export const dashboardReviewManageRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (
  app,
  { ctx },
) => {
  const { db } = ctx.deps;
  const ports = { db, sourceKinds: ctx.deps.runs.sourceKinds };
  const hide = true;
  const base = `${DASHBOARD_API}/projects/:project/review`;
  /** The queue; `review`: a route a `reviewer` member may use too (their own reviews). */
  const queueOf = async (
    request: WithSession & { params: { project: string; queue: string } },
    allow: { review?: boolean } = {},
  ) => {
    const project = await projectOf(db, request, allow);
    return requireQueue(db, project.id, request.params.queue);
  };

  app.post(
    `${base}/queues`,
    { schema: { hide, params: ProjectParam, body: CreateQueue } },
    async (request, reply) => {
      const project = await projectOf(db, request);
      return reply.code(201).send(await createQueue(db, project.id, request.body));
    },
  );

  app.post(
    `${base}/queues/:queue/items`,
    { schema: { hide, params: QueueParam, body: AddItems } },
    async (request) => {
      const queue = await queueOf(request);
      const rubric = await queueRubric(db, queue);
      const resolve = async (ref: string, loc: (string | number)[]) => {
        const ev = rubric.find((e) => e.id === ref || e.name === ref);
        if (!ev) throw ApiError.invalid(loc, `Evaluator '${ref}' is not in the queue's rubric`);
        return ev.id;
      };
      const r = await addItems(ports, queue, rubric[0]?.id ?? '', resolve, request.body, MEMBER_PERMISSIONS);
      return { object: 'annotation_items.added' as const, ...r };
    },
  );

  app.get(
    `${base}/queues/:queue/scores`,
    { schema: { hide, params: QueueParam, querystring: ExportScoresQuery } },
    async (request, reply) => {
      const queue = await queueOf(request);
      const rubric = await queueRubric(db, queue);
      const ref = request.query.evaluator;
      const evaluators = ref === undefined ? rubric : rubric.filter((e) => e.id === ref || e.name === ref);
      if (!evaluators.length)
        throw ApiError.invalid(['query', 'evaluator'], `Evaluator '${ref}' is not in the queue's rubric`);
      const format = request.query.format ?? 'jsonl';
      const ext = format === 'csv' ? 'csv' : 'jsonl';
      return reply
        .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson')
        .header('content-disposition', `attachment; filename="${queue.id}-scores.${ext}"`)
        .send(Readable.from(exportLines(db, queue, evaluators, format)));
    },
  );

  app.get(
    `${base}/queues/:queue/my-reviews`,
    { schema: { hide, params: QueueParam, querystring: Type.Object(PageQuery) } },
    async (request) => {
      const queue = await queueOf(request, { review: true });
      const reviewer = reviewerOfUser(userOf(request).id);
      return listReviews(db, queue, { reviewer }, pageOf(request.query));
    },
  );

  app.post(
    `${base}/queues/:queue/reviews/:review/correct`,
    { schema: { hide, params: ReviewParam, body: CorrectReview } },
    async (request, reply) => {
      const queue = await queueOf(request, { review: true });
      const current = await requireReview(db, queue, request.params.review);
      const reviewer = reviewerOfUser(userOf(request).id);
      // The dashboard corrects one's own reviews only; another's is settled, not overwritten.
      if (current.reviewer !== reviewer) {
        throw new ApiError('permission_denied', 'Only the reviewer who wrote a review may correct it here', {
          review: current.id,
        });
      }
      const rubric = await queueRubric(db, queue);
      return reply.code(201).send(await correctReview(db, rubric, current, reviewer, request.body));
    },
  );
};
