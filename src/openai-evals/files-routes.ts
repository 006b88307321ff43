import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../auth/guard.js';
import type { UploadContext } from '../catalog/json-lines.js';
import { responses } from '../http/schemas.js';
import { ApiError } from '../shared/errors.js';
import { installOpenAiValidation } from './errors.js';
import {
  deleteFile,
  FILE_PURPOSES,
  fileContent,
  finishFile,
  listFiles,
  requireFile,
  storeFile,
} from './files-service.js';

const tags = ['openai-evals'];

/**
 * A file's content is served as JSON lines (a stream of the stored rows), documented as such rather than
 * as a JSON string; the errors keep the envelope.
 */
const ContentResponses: Record<number, unknown> = {
  ...responses({}, 404, 422),
  200: {
    description: 'One JSON object a line, as uploaded',
    content: { 'application/jsonl': { schema: Type.String({ description: 'JSON lines' }) } },
  },
};

const FileObject = Type.Object({
  id: Type.String(),
  object: Type.Literal('file'),
  bytes: Type.Integer(),
  created_at: Type.Integer({ description: 'Unix seconds' }),
  filename: Type.String(),
  purpose: Type.String(),
  status: Type.Literal('processed'),
  expires_at: Type.Null(),
  status_details: Type.Null(),
});
const FileList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(FileObject),
  first_id: Type.Union([Type.String(), Type.Null()]),
  last_id: Type.Union([Type.String(), Type.Null()]),
  has_more: Type.Boolean(),
});
const FileIdParam = Type.Object({ file_id: Type.String({ minLength: 1, maxLength: 200 }) });
const ListQuery = Type.Object({
  after: Type.Optional(Type.String({ maxLength: 200 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
  order: Type.Optional(Type.Enum(['asc', 'desc'])),
  purpose: Type.Optional(Type.String({ maxLength: 100 })),
});
const Upload = Type.Object({
  file: Type.String({ format: 'binary', description: 'JSON lines, one object per line' }),
  purpose: Type.Enum([...FILE_PURPOSES]),
});

/**
 * OpenAI's files API for eval data: a `purpose: "evals"` upload is a dataset (streamed as JSON lines,
 * any size within EVALGATE_UPLOAD_LIMIT), listed with cursor pagination, read back line by line.
 */
/**
 * A multipart body the parser cannot read (cut short, no boundary, too many parts) is the client's
 * mistake: 400, or 413 for the parser's size limits, never a 500.
 */
function malformed(err: unknown): never {
  if (err instanceof ApiError) throw err;
  const status = (err as { statusCode?: unknown }).statusCode;
  const message = err instanceof Error ? err.message : String(err);
  if (status === 413) throw new ApiError('payload_too_large', message);
  throw new ApiError('bad_request', `Malformed multipart/form-data body: ${message}`);
}

export const fileRoutes: FastifyPluginAsyncTypebox<{ ports: UploadContext }> = async (app, { ports }) => {
  const ctx = ports;
  installOpenAiValidation(app);
  await app.register(multipart, {
    limits: { fileSize: ctx.uploadLimit, files: 1, fields: 10, fieldSize: 10_000 },
  });

  app.post(
    '/v1/files',
    {
      config: { permission: 'data:write' },
      attachValidation: true,
      schema: {
        tags,
        summary: 'Upload a JSON-lines file (multipart form: file, purpose "evals")',
        body: { content: { 'multipart/form-data': { schema: Upload } } },
        response: responses({ 200: FileObject }, 409, 413, 415),
      },
    },
    async (req) => {
      if (!req.isMultipart()) {
        throw new ApiError(
          'unsupported_media_type',
          'Send the file as multipart/form-data with fields file and purpose',
        );
      }
      const { projectId } = principalOf(req);
      let stored: { id: string } | null = null;
      let purpose: string | undefined;
      const parts = req.parts();
      for (;;) {
        const next = await parts.next().catch(malformed);
        if (next.done) break;
        const part = next.value;
        if (part.type === 'file') {
          if (stored) throw new ApiError('bad_request', 'Send one file per upload');
          // The parser fails the file's stream when the body is cut short: that is a malformed body too.
          let cut: unknown = null;
          part.file.on('error', (err) => {
            cut = err;
          });
          stored = await storeFile(ctx, projectId, part.filename, part.file).catch((err: unknown) => {
            if (cut !== null && !(err instanceof ApiError)) malformed(cut);
            throw err;
          });
          if (part.file.truncated) {
            throw new ApiError('payload_too_large', `The file is larger than ${ctx.uploadLimit} bytes`);
          }
        } else if (part.fieldname === 'purpose') {
          purpose = String(part.value);
        }
      }
      return finishFile(ctx.db, projectId, stored, purpose);
    },
  );

  app.get(
    '/v1/files',
    {
      config: { permission: 'data:read' },
      schema: {
        tags,
        summary: 'List files, newest first',
        querystring: ListQuery,
        response: responses({ 200: FileList }),
      },
    },
    async (req) => listFiles(ctx.db, principalOf(req).projectId, req.query),
  );

  app.get(
    '/v1/files/:file_id',
    {
      config: { permission: 'data:read' },
      schema: {
        tags,
        summary: 'Get a file',
        params: FileIdParam,
        response: responses({ 200: FileObject }, 404, 422),
      },
    },
    async (req) => requireFile(ctx.db, principalOf(req).projectId, req.params.file_id),
  );

  app.get(
    '/v1/files/:file_id/content',
    {
      config: { permission: 'data:read' },
      schema: {
        tags,
        summary: "The file's rows as JSON lines",
        params: FileIdParam,
        response: ContentResponses,
      },
    },
    async (req, reply) => {
      await requireFile(ctx.db, principalOf(req).projectId, req.params.file_id);
      return reply.type('application/jsonl').send(fileContent(ctx.db, req.params.file_id));
    },
  );

  app.delete(
    '/v1/files/:file_id',
    {
      config: { permission: 'data:write' },
      schema: {
        tags,
        summary: 'Delete a file (409 while a queued or running run reads it)',
        params: FileIdParam,
        response: responses(
          {
            200: Type.Object({
              id: Type.String(),
              object: Type.Literal('file'),
              deleted: Type.Literal(true),
            }),
          },
          404,
          409,
          422,
        ),
      },
    },
    async (req) => deleteFile(ctx.db, principalOf(req).projectId, req.params.file_id),
  );
};
