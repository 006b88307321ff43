import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import type { Database } from '../db/schema.js';
import { PageQuery, pageOf } from '../http/schemas.js';
import { AgreementQuery, evaluatorAgreement, queueAgreement } from '../review/agreement/service.js';
import { claimNext, remainingFor, skipItem } from '../review/claims.js';
import { requireItem } from '../review/items.js';
import { listQueues, type QueueRow, queueRubric, requireQueue, toQueue } from '../review/queues.js';
import { submitReview } from '../review/reviews.js';
import { FlagBody, SubmitReview } from '../review/schemas.js';
import { viewOf } from '../review/view.js';
import { DASHBOARD_API, type DashboardContext, projectOf, userOf, type WithSession } from './context.js';
import { ProjectParam } from './project-routes.js';

type Db = Kysely<Database>;

const QueueParam = Type.Object({
  ...ProjectParam.properties,
  queue: Type.String({ minLength: 1, maxLength: 300 }),
});
const ItemParam = Type.Object({
  ...QueueParam.properties,
  item: Type.String({ minLength: 1, maxLength: 100 }),
});
const HideJudge = Type.Object({ hide_judge: Type.Optional(Type.Boolean()) }, { additionalProperties: false });

/** The reviewer a dashboard user reviews as: the same person as behind the keys they made (`user:<id>`). */
export const reviewerOfUser = (userId: string): string => `user:${userId}`;

/** Per reviewer: items reviewed, skipped, flagged and held now, with the person's name where they are a user. */
async function progressOf(db: Db, queueId: string) {
  const rows = await db
    .selectFrom('annotation_assignments')
    .select(['reviewer', 'state', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('queue_id', '=', queueId)
    .groupBy(['reviewer', 'state'])
    .execute();
  const reviewers = [...new Set(rows.map((r) => r.reviewer))].sort();
  const userIds = reviewers.filter((r) => r.startsWith('user:')).map((r) => r.slice(5));
  const users = userIds.length
    ? await db.selectFrom('users').select(['id', 'name', 'email']).where('id', 'in', userIds).execute()
    : [];
  const byId = new Map(users.map((u) => [`user:${u.id}`, u.name ?? u.email ?? u.id]));
  const count = (reviewer: string, state: string) =>
    Number(rows.find((r) => r.reviewer === reviewer && r.state === state)?.n ?? 0);
  return reviewers.map((reviewer) => ({
    reviewer,
    name: byId.get(reviewer) ?? reviewer,
    reviewed: count(reviewer, 'reviewed'),
    skipped: count(reviewer, 'skipped'),
    flagged: count(reviewer, 'flagged'),
    claimed: count(reviewer, 'claimed'),
  }));
}

/**
 * Human review in the dashboard: the project's queues with their progress, the signed-in user claiming,
 * scoring, skipping and flagging items (as `user:<id>`, the reviewer the API knows them by), and the
 * agreement figures of a queue or an evaluator. A user outside the project gets 404 on every route.
 */
export const dashboardReviewRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (
  app,
  { ctx },
) => {
  const { db } = ctx.deps;
  const hide = true;
  const base = `${DASHBOARD_API}/projects/:project/review`;
  const queueOf = async (request: WithSession & { params: { project: string; queue: string } }) => {
    const project = await projectOf(db, request);
    return requireQueue(db, project.id, request.params.queue);
  };
  const evaluatorsOf = (queue: QueueRow) => JSON.parse(queue.evaluators) as string[];
  const view = async (queue: QueueRow, itemId: string, reviewer: string, hideJudge: boolean) =>
    viewOf(db, queue.project_id, await requireItem(db, queue, itemId), evaluatorsOf(queue), {
      reviewer,
      hideJudge,
    });

  app.get(
    `${base}/queues`,
    { schema: { hide, params: ProjectParam, querystring: Type.Object(PageQuery) } },
    async (request) => {
      const project = await projectOf(db, request);
      return listQueues(db, project.id, pageOf(request.query));
    },
  );

  app.get(`${base}/queues/:queue`, { schema: { hide, params: QueueParam } }, async (request) => {
    const queue = await queueOf(request);
    const reviewer = reviewerOfUser(userOf(request).id);
    return {
      queue: await toQueue(db, queue),
      reviewer,
      remaining: await remainingFor(db, queue.id, reviewer),
      progress: await progressOf(db, queue.id),
    };
  });

  app.post(
    `${base}/queues/:queue/claim`,
    { schema: { hide, params: QueueParam, querystring: HideJudge } },
    async (request) => {
      const queue = await queueOf(request);
      const reviewer = reviewerOfUser(userOf(request).id);
      const id = await claimNext(db, queue, reviewer);
      const hideJudge = request.query.hide_judge ?? false;
      return {
        item: id === null ? null : await view(queue, id, reviewer, hideJudge),
        remaining: await remainingFor(db, queue.id, reviewer),
      };
    },
  );

  app.get(
    `${base}/queues/:queue/items/:item`,
    { schema: { hide, params: ItemParam, querystring: HideJudge } },
    async (request) => {
      const queue = await queueOf(request);
      const reviewer = reviewerOfUser(userOf(request).id);
      const item = await view(queue, request.params.item, reviewer, request.query.hide_judge ?? false);
      const reviews = await db
        .selectFrom('annotation_reviews')
        .select(['evaluator_id', 'score', 'passed', 'label', 'comment'])
        .where('item_id', '=', request.params.item)
        .where('reviewer', '=', reviewer)
        .where('superseded_by', 'is', null)
        .execute();
      const mine = reviews.map((r) => ({ ...r, passed: r.passed === null ? null : r.passed === 1 }));
      return { item, mine };
    },
  );

  app.post(
    `${base}/queues/:queue/items/:item/review`,
    { schema: { hide, params: ItemParam, body: SubmitReview } },
    async (request, reply) => {
      const queue = await queueOf(request);
      const item = await requireItem(db, queue, request.params.item);
      const reviewer = reviewerOfUser(userOf(request).id);
      const reviews = await submitReview(
        db,
        queue,
        await queueRubric(db, queue),
        item,
        reviewer,
        request.body,
      );
      return reply
        .code(201)
        .send({ id: item.id, state: (await requireItem(db, queue, item.id)).state, reviews });
    },
  );

  app.post(
    `${base}/queues/:queue/items/:item/skip`,
    { schema: { hide, params: ItemParam } },
    async (request) => {
      const queue = await queueOf(request);
      const item = await requireItem(db, queue, request.params.item);
      await skipItem(db, item, reviewerOfUser(userOf(request).id));
      return { id: item.id, state: (await requireItem(db, queue, item.id)).state };
    },
  );

  app.post(
    `${base}/queues/:queue/items/:item/flag`,
    { schema: { hide, params: ItemParam, body: FlagBody } },
    async (request) => {
      const queue = await queueOf(request);
      const item = await requireItem(db, queue, request.params.item);
      await skipItem(db, item, reviewerOfUser(userOf(request).id), request.body.reason);
      return { id: item.id, state: (await requireItem(db, queue, item.id)).state };
    },
  );

  app.get(
    `${base}/queues/:queue/agreement`,
    { schema: { hide, params: QueueParam, querystring: Type.Pick(AgreementQuery, ['seed', 'resamples']) } },
    async (request) => {
      const queue = await queueOf(request);
      return queueAgreement(db, queue.project_id, queue.id, request.query);
    },
  );

  app.get(
    `${base}/evaluators/:evaluator/agreement`,
    {
      schema: {
        hide,
        params: Type.Object({
          ...ProjectParam.properties,
          evaluator: Type.String({ minLength: 1, maxLength: 300 }),
        }),
        querystring: AgreementQuery,
      },
    },
    async (request) => {
      const project = await projectOf(db, request);
      return evaluatorAgreement(db, project.id, request.params.evaluator, request.query);
    },
  );
};
