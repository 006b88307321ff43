import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../auth/guard.js';
import { PageQuery, pageOf, responses } from '../http/schemas.js';
import {
  Agreement,
  AgreementQuery,
  evaluatorAgreement,
  QueueAgreement,
  queueAgreement,
} from './agreement/service.js';
import type { ReviewPorts } from './ports.js';
import * as queues from './queues.js';
import { itemRoutes } from './routes-items.js';
import { settleRoutes } from './routes-settle.js';
import { CreateQueue, PatchQueue, Queue, QueueDeleted, QueueList, QueueParam } from './schemas.js';

const tags = ['review'];

export const reviewRoutes: FastifyPluginAsyncTypebox<{ ports: ReviewPorts }> = async (app, { ports }) => {
  const { db } = ports;

  app.post(
    '/v1/annotation-queues',
    {
      config: { permission: 'review:write' },
      schema: {
        tags,
        summary:
          'Create an annotation queue: a rubric (evaluators whose scales reviewers score on) and its items',
        body: CreateQueue,
        response: responses({ 201: Queue }, 409, 413, 415, 422),
      },
    },
    async (req, reply) =>
      reply.code(201).send(await queues.createQueue(db, principalOf(req).projectId, req.body)),
  );

  app.get(
    '/v1/annotation-queues',
    {
      config: { permission: 'review:read' },
      schema: {
        tags,
        summary: 'List annotation queues, newest first, with their counts',
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: responses({ 200: QueueList }, 422),
      },
    },
    async (req) => queues.listQueues(db, principalOf(req).projectId, pageOf(req.query)),
  );

  app.get(
    '/v1/annotation-queues/:queue',
    {
      config: { permission: 'review:read' },
      schema: {
        tags,
        summary: 'Get an annotation queue by id or name, with its rubric and counts',
        params: QueueParam,
        response: responses({ 200: Queue }, 404, 422),
      },
    },
    async (req) =>
      queues.toQueue(db, await queues.requireQueue(db, principalOf(req).projectId, req.params.queue)),
  );

  app.patch(
    '/v1/annotation-queues/:queue',
    {
      config: { permission: 'review:write' },
      schema: {
        tags,
        summary: "Update an annotation queue's name, description, rubric or claim time",
        params: QueueParam,
        body: PatchQueue,
        response: responses({ 200: Queue }, 404, 409, 413, 415, 422),
      },
    },
    async (req) => queues.patchQueue(db, principalOf(req).projectId, req.params.queue, req.body),
  );

  app.delete(
    '/v1/annotation-queues/:queue',
    {
      config: { permission: 'review:write' },
      schema: {
        tags,
        summary: 'Delete an annotation queue with its items and reviews',
        params: QueueParam,
        response: responses({ 200: QueueDeleted }, 404, 422),
      },
    },
    async (req) => {
      const { id } = await queues.deleteQueue(db, principalOf(req).projectId, req.params.queue);
      return { object: 'annotation_queue' as const, id, deleted: true as const };
    },
  );

  app.get(
    '/v1/annotation-queues/:queue/agreement',
    {
      config: { permission: 'review:read' },
      schema: {
        tags,
        summary: "Judge–human agreement of each rubric evaluator over the queue's reviews",
        params: QueueParam,
        querystring: Type.Pick(AgreementQuery, ['seed', 'resamples']),
        response: responses({ 200: QueueAgreement }, 404, 422),
      },
    },
    async (req) => queueAgreement(db, principalOf(req).projectId, req.params.queue, req.query),
  );

  app.get(
    '/v1/evaluators/:evaluator/agreement',
    {
      config: { permission: 'review:read' },
      schema: {
        tags,
        summary:
          "Agreement between an evaluator's scores and human reviews: κ, correlations, MAE, confusion matrix, bootstrap intervals, per prompt hash",
        params: Type.Object({
          evaluator: Type.String({ minLength: 1, maxLength: 300, description: 'Evaluator id or name' }),
        }),
        querystring: AgreementQuery,
        response: responses({ 200: Agreement }, 404, 422),
      },
    },
    async (req) => evaluatorAgreement(db, principalOf(req).projectId, req.params.evaluator, req.query),
  );

  await app.register(itemRoutes, { ports });
  await app.register(settleRoutes, { ports });
};
