import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import type { Database } from '../db/schema.js';
import { PageQuery, pageOf } from '../http/schemas.js';
import { AgreementQuery, evaluatorAgreement, queueAgreement } from '../review/agreement/service.js';
import { remainingFor } from '../review/claims.js';
import { answersOf, claimFor, itemFor, queueProgress, reviewItem, setAside } from '../review/flow.js';
import { requireItem } from '../review/items.js';
import { listQueues, requireQueue, toQueue } from '../review/queues.js';
import { FlagBody, SubmitReview } from '../review/schemas.js';
import { DASHBOARD_API, type DashboardContext, projectOf, userOf, type WithSession } from './context.js';
import { ProjectParam } from './project-routes.js';
import { userNames } from './repository.js';

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

/** Per reviewer: the queue's progress, with the person's name where the reviewer is a user. */
async function progressOf(db: Db, queueId: string) {
  const progress = await queueProgress(db, queueId);
  const userIds = progress.filter((p) => p.reviewer.startsWith('user:')).map((p) => p.reviewer.slice(5));
  const names = await userNames(db, userIds);
  const nameOf = (reviewer: string) =>
    (reviewer.startsWith('user:') ? names.get(reviewer.slice(5)) : undefined) ?? reviewer;
  return progress.map(({ reviewer, ...counts }) => ({ reviewer, name: nameOf(reviewer), ...counts }));
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
  // Every route here is reviewing (a `reviewer` member may use it) but an evaluator's agreement.
  const review = { review: true };
  const queueOf = async (request: WithSession & { params: { project: string; queue: string } }) => {
    const project = await projectOf(db, request, review);
    return requireQueue(db, project.id, request.params.queue);
  };

  app.get(
    `${base}/queues`,
    { schema: { hide, params: ProjectParam, querystring: Type.Object(PageQuery) } },
    async (request) => {
      const project = await projectOf(db, request, review);
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
      return claimFor(db, queue, reviewerOfUser(userOf(request).id), request.query.hide_judge ?? false);
    },
  );

  app.get(
    `${base}/queues/:queue/items/:item`,
    { schema: { hide, params: ItemParam, querystring: HideJudge } },
    async (request) => {
      const queue = await queueOf(request);
      const reviewer = reviewerOfUser(userOf(request).id);
      const row = await requireItem(db, queue, request.params.item);
      const item = await itemFor(db, queue, row, reviewer, request.query.hide_judge ?? false);
      return { item, mine: await answersOf(db, row.id, reviewer) };
    },
  );

  app.post(
    `${base}/queues/:queue/items/:item/review`,
    { schema: { hide, params: ItemParam, body: SubmitReview } },
    async (request, reply) => {
      const queue = await queueOf(request);
      const reviewer = reviewerOfUser(userOf(request).id);
      return reply.code(201).send(await reviewItem(db, queue, request.params.item, reviewer, request.body));
    },
  );

  app.post(
    `${base}/queues/:queue/items/:item/skip`,
    { schema: { hide, params: ItemParam } },
    async (request) => {
      const queue = await queueOf(request);
      return setAside(db, queue, request.params.item, reviewerOfUser(userOf(request).id), null);
    },
  );

  app.post(
    `${base}/queues/:queue/items/:item/flag`,
    { schema: { hide, params: ItemParam, body: FlagBody } },
    async (request) => {
      const queue = await queueOf(request);
      const reviewer = reviewerOfUser(userOf(request).id);
      return setAside(db, queue, request.params.item, reviewer, request.body.reason);
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
