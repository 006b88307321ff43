import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { CONTENT_PERMISSION } from '../auth/content.js';
import { principalOf } from '../auth/guard.js';
import { settleWithin } from '../catalog/logs/service.js';
import { pageOf, responses } from '../http/schemas.js';
import {
  ListSessionsQuery,
  Session,
  SessionDetail,
  SessionIdParam,
  SessionList,
  SessionTurnsQuery,
  ToolStepDetail,
  ToolStepParams,
} from './schemas.js';
import * as service from './service.js';
import { getToolStep } from './tool-step-read.js';

const tags = ['sessions'];

/** What the session routes need: the database and the task-log writer's flush (read-your-writes). */
export type SessionPorts = service.SessionContext;

export const sessionRoutes: FastifyPluginAsyncTypebox<{ ports: SessionPorts }> = async (app, { ports }) => {
  const settle = () => settleWithin(ports.settle);

  app.get(
    '/v1/sessions',
    {
      config: { permission: CONTENT_PERMISSION.session },
      schema: {
        tags,
        summary: 'Sessions (conversations, agent runs) of the project, newest first, with their totals',
        querystring: ListSessionsQuery,
        response: responses({ 200: SessionList }, 404, 422),
      },
    },
    async (req) => {
      await settle();
      return service.listSessions(ports, principalOf(req).projectId, req.query, pageOf(req.query));
    },
  );

  app.get(
    '/v1/sessions/:session',
    {
      config: { permission: CONTENT_PERMISSION.session },
      schema: {
        tags,
        summary:
          'A session: its calls in order (messages, tool calls with arguments and results, scores) and totals',
        params: SessionIdParam,
        querystring: SessionTurnsQuery,
        response: responses({ 200: SessionDetail }, 404, 413, 422),
      },
    },
    async (req) => {
      await settle();
      return service.getSession(ports, principalOf(req).projectId, req.params.session, req.query);
    },
  );

  app.get(
    '/v1/sessions/:session/tool-calls/:tool_call',
    {
      config: { permission: CONTENT_PERMISSION.session },
      schema: {
        tags,
        summary:
          'A tool step: one tool call of a session (name, arguments, result), the conversation before it, and its scores',
        params: ToolStepParams,
        response: responses({ 200: ToolStepDetail }, 404, 422),
      },
    },
    async (req) => {
      await settle();
      const { session, tool_call } = req.params;
      return getToolStep(ports.db, principalOf(req).projectId, session, tool_call);
    },
  );

  app.post(
    '/v1/sessions/:session/end',
    {
      config: { permission: 'inference:write' },
      schema: {
        tags,
        summary:
          'Ends a session: a session monitor scores it at its next sweep instead of waiting for it to be idle',
        params: SessionIdParam,
        response: responses({ 200: Session }, 404, 422),
      },
    },
    async (req) => {
      // The calls answered before the end are in the session when it ends.
      await settle();
      return service.endSession(ports.db, principalOf(req).projectId, req.params.session);
    },
  );
};
