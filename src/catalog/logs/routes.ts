import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { CONTENT_PERMISSION } from '../../auth/content.js';
import { principalOf } from '../../auth/guard.js';
import { pageOf, responses } from '../../http/schemas.js';
import { bodyKind, installNdjsonParser, jsonOrLines, uploadStream } from '../../http/uploads.js';
import {
  ContainerLogsParam,
  type ImportLog,
  ImportLogs,
  ListLogsQuery,
  LogImport,
  TaskLogList,
} from './schemas.js';
import * as service from './service.js';

const tags = ['logs'];

const JsonLines = Type.Unknown({
  description:
    'One task log entry (as in the JSON array form) per line; gzip allowed (at most EVALGATE_UPLOAD_LIMIT bytes once decompressed, and 100 times the compressed size)',
});

export const logRoutes: FastifyPluginAsyncTypebox<{ ports: service.LogContext }> = async (app, { ports }) => {
  const ctx = ports;
  const { db } = ctx;
  installNdjsonParser(app);

  app.get(
    '/v1/containers/:container/logs',
    {
      config: { permission: CONTENT_PERMISSION.task_log },
      schema: {
        tags,
        summary: "A container's task logs in seq order, optionally of one model or since a time",
        params: ContainerLogsParam,
        querystring: ListLogsQuery,
        response: responses({ 200: TaskLogList }, 404, 422),
      },
    },
    async (req) => {
      await service.settled(ctx);
      return service.listLogs(
        db,
        principalOf(req).projectId,
        req.params.container,
        req.query,
        pageOf(req.query),
      );
    },
  );

  app.post(
    '/v1/containers/:container/logs',
    {
      config: { permission: 'logs:write' },
      preValidation: jsonOrLines(ImportLogs),
      schema: {
        tags,
        summary: 'Import task logs recorded elsewhere: a JSON array or streamed JSON lines, all or nothing',
        params: ContainerLogsParam,
        body: {
          content: {
            'application/json': { schema: ImportLogs },
            'application/x-ndjson': { schema: JsonLines },
          },
        },
        response: responses({ 201: LogImport }, 404, 413, 415, 422),
      },
    },
    async (req, reply) => {
      const projectId = principalOf(req).projectId;
      const result =
        bodyKind(req) === 'json'
          ? await service.importLogs(db, projectId, req.params.container, req.body as ImportLog[])
          : await service.importLogLines(
              ctx,
              projectId,
              req.params.container,
              uploadStream(req, { maxBytes: ctx.uploadLimit }),
            );
      return reply.code(201).send(result);
    },
  );
};
