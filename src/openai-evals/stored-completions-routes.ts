import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { CONTENT_PERMISSION } from '../auth/content.js';
import { principalOf } from '../auth/guard.js';
import { responses } from '../http/schemas.js';
import { installOpenAiValidation } from './errors.js';
import {
  CompletionIdParam,
  ListMessagesQuery,
  ListStoredQuery,
  StoredChatCompletion,
  StoredChatCompletionList,
  StoredCompletionDeleted,
  StoredMessageList,
  UpdateStoredBody,
} from './stored-completions-schemas.js';
import {
  deleteCompletion,
  listCompletions,
  listMessages,
  retrieveCompletion,
  type StoredCompletionPorts,
  updateCompletion,
} from './stored-completions-service.js';

const tags = ['openai-evals'];

/**
 * OpenAI's stored chat completions: the chat calls made with `store: true`, read from their task logs
 * (read like logs, `logs:read`; changed with `logs:write`). Invalid requests answer 400 naming every
 * problem, as the SDKs expect.
 */
export const storedCompletionRoutes: FastifyPluginAsyncTypebox<{ ports: StoredCompletionPorts }> = async (
  app,
  { ports },
) => {
  installOpenAiValidation(app);

  app.get(
    '/v1/chat/completions',
    {
      config: { permission: CONTENT_PERMISSION.task_log },
      schema: {
        tags,
        summary: 'List stored chat completions (oldest first unless order=desc; metadata[key]=value filters)',
        querystring: ListStoredQuery,
        response: responses({ 200: StoredChatCompletionList }),
      },
    },
    async (req) => listCompletions(ports, principalOf(req).projectId, req.query),
  );

  app.get(
    '/v1/chat/completions/:completion_id',
    {
      config: { permission: CONTENT_PERMISSION.task_log },
      schema: {
        tags,
        summary: 'Get a stored chat completion',
        params: CompletionIdParam,
        response: responses({ 200: StoredChatCompletion }, 404, 422),
      },
    },
    async (req) => retrieveCompletion(ports, principalOf(req).projectId, req.params.completion_id),
  );

  app.post(
    '/v1/chat/completions/:completion_id',
    {
      config: { permission: 'logs:write' },
      attachValidation: true,
      schema: {
        tags,
        summary: "Replace a stored chat completion's metadata",
        params: CompletionIdParam,
        body: UpdateStoredBody,
        response: responses({ 200: StoredChatCompletion }, 404, 413, 415, 422),
      },
    },
    async (req) => updateCompletion(ports, principalOf(req).projectId, req.params.completion_id, req.body),
  );

  app.delete(
    '/v1/chat/completions/:completion_id',
    {
      config: { permission: 'logs:write' },
      schema: {
        tags,
        summary: 'Delete a stored chat completion (its task log stays, no longer served as one)',
        params: CompletionIdParam,
        response: responses({ 200: StoredCompletionDeleted }, 404, 413, 415, 422),
      },
    },
    async (req) => deleteCompletion(ports, principalOf(req).projectId, req.params.completion_id),
  );

  app.get(
    '/v1/chat/completions/:completion_id/messages',
    {
      config: { permission: CONTENT_PERMISSION.task_log },
      schema: {
        tags,
        summary: "A stored chat completion's request messages (cursor pagination)",
        params: CompletionIdParam,
        querystring: ListMessagesQuery,
        response: responses({ 200: StoredMessageList }, 404, 422),
      },
    },
    async (req) => listMessages(ports, principalOf(req).projectId, req.params.completion_id, req.query),
  );
};
