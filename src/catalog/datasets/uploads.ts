import type { Readable } from 'node:stream';
import type { MultipartFile, MultipartValue } from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { bodyKind, CSV_TYPES, jsonOrLines, uploadStream } from '../../http/uploads.js';
import { toIssues, validatorCompiler } from '../../http/validation.js';
import { CsvSyntaxError, csvRecords } from '../../shared/csv.js';
import { ApiError } from '../../shared/errors.js';
import { CreateDataset, type Dataset, UploadDatasetQuery } from './schemas.js';
import * as service from './service.js';

/**
 * The forms of a dataset upload over HTTP: a JSON body (`label`, `items`), JSON lines or CSV streamed
 * (label and description in the query), or a multipart form whose `file` is JSON lines or CSV (label and
 * description as query parameters or as form fields before the file). CSV is read as the CLI reads it
 * (shared/csv.ts: the header row names the fields) and stored as the JSON lines it amounts to.
 */

export type DatasetBody = 'json' | 'ndjson' | 'csv' | 'multipart';

const ACCEPTED =
  'send application/json ({"label", "items"}), application/x-ndjson, text/csv or multipart/form-data with a file';

/**
 * In the datasets plugin, a body of any other type is refused at parsing with the forms an upload takes
 * (the other routes take JSON alone).
 */
export function installUnsupportedParser(app: FastifyInstance): void {
  app.addContentTypeParser('*', (req, _payload, done) => {
    const what = req.method === 'POST' ? ACCEPTED : 'send application/json';
    done(
      new ApiError(
        'unsupported_media_type',
        `Unsupported Content-Type '${req.headers['content-type']}'; ${what}`,
      ),
    );
  });
}

/** Which form of upload a request is; any other body is a 415 naming the accepted ones. */
export function datasetBodyKind(req: FastifyRequest): DatasetBody {
  const type = req.mediaType;
  if (type !== undefined && CSV_TYPES.includes(type)) return 'csv';
  if (type === 'multipart/form-data') return 'multipart';
  try {
    return bodyKind(req);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'unsupported_media_type') {
      throw new ApiError('unsupported_media_type', `Unsupported Content-Type '${type}'; ${ACCEPTED}`);
    }
    throw err;
  }
}

/** preValidation of the upload routes: a JSON body of another JSON type is checked against CreateDataset. */
export function datasetPreValidation(): (req: FastifyRequest) => Promise<void> {
  const json = jsonOrLines(CreateDataset);
  return async (req) => {
    const kind = datasetBodyKind(req);
    if (kind === 'json') await json(req);
  };
}

/** CSV records as JSON lines; a malformed CSV is a 422 naming its line. */
export async function* csvLines(source: Readable): AsyncGenerator<string> {
  try {
    for await (const record of csvRecords(source)) yield `${JSON.stringify(record)}\n`;
  } catch (err) {
    if (err instanceof CsvSyntaxError) {
      throw ApiError.invalid(
        ['body', 'line', err.line],
        `Line ${err.line} of the CSV: ${err.reason}`,
        'csv_invalid',
      );
    }
    throw err;
  }
}

type Query = Static<typeof UploadDatasetQuery>;

let checkFields: ReturnType<typeof validatorCompiler> | null = null;

/** Form fields hold what the query may: checked against the same schema, reported as `body.<field>`. */
function formQuery(fields: Record<string, string>, query: Query): Query {
  checkFields ??= validatorCompiler({
    schema: UploadDatasetQuery,
    httpPart: 'body',
    method: 'POST',
    url: '',
  });
  const merged = { ...fields, ...query };
  if (!checkFields(merged)) {
    const errors = (checkFields as unknown as { errors?: Parameters<typeof toIssues>[1] | null }).errors;
    throw ApiError.validation(toIssues('body', errors ?? []));
  }
  return merged as Query;
}

/** The file part's format, from its name or else its media type. */
function fileFormat(part: MultipartFile): 'csv' | 'ndjson' {
  const name = part.filename.toLowerCase();
  if (name.endsWith('.csv') || CSV_TYPES.includes(part.mimetype)) return 'csv';
  if (/\.(jsonl|ndjson)$/.test(name) || part.mimetype === 'application/x-ndjson') return 'ndjson';
  throw new ApiError(
    'unsupported_media_type',
    `Cannot tell the format of the file '${part.filename}' (${part.mimetype}): name it .csv, .jsonl or .ndjson`,
  );
}

/** A multipart body the parser cannot read is the client's mistake: 400, or 413 for its size limits. */
function malformed(err: unknown): never {
  if (err instanceof ApiError) throw err;
  const status = (err as { statusCode?: unknown }).statusCode;
  const message = err instanceof Error ? err.message : String(err);
  if (status === 413) throw new ApiError('payload_too_large', message);
  throw new ApiError('bad_request', `Malformed multipart/form-data body: ${message}`);
}

async function fromMultipart(
  ctx: service.DatasetContext,
  projectId: string,
  req: FastifyRequest & { query: Query },
): Promise<Dataset> {
  const fields: Record<string, string> = {};
  const parts = req.parts();
  for (;;) {
    const next = await parts.next().catch(malformed);
    if (next.done) break;
    const part = next.value;
    if (part.type === 'field') {
      const field = part as MultipartValue;
      if (field.fieldname === 'label' || field.fieldname === 'description') {
        fields[field.fieldname] = String(field.value);
      }
      continue;
    }
    let query: Query;
    let format: 'csv' | 'ndjson';
    try {
      query = formQuery(fields, req.query);
      format = fileFormat(part);
    } catch (err) {
      part.file.resume();
      throw err;
    }
    let cut: unknown = null;
    part.file.on('error', (err) => {
      cut = err;
    });
    const rows = format === 'csv' ? csvLines(part.file) : part.file;
    const dataset = await service.uploadDataset(ctx, projectId, query, rows).catch((err: unknown) => {
      // The rest of the file is read and dropped, so that the form (and the connection) can end.
      part.file.resume();
      if (cut !== null && !(err instanceof ApiError)) malformed(cut);
      throw err;
    });
    if (part.file.truncated) {
      throw new ApiError('payload_too_large', `The file is larger than ${ctx.uploadLimit} bytes`);
    }
    // Parts after the file are not read: the form ends with it.
    return dataset;
  }
  throw ApiError.invalid(['body', 'file'], 'Field required: the form has no file part', 'missing');
}

/**
 * Creates a dataset in the project from a request of a route validated with `datasetPreValidation()`
 * and UploadDatasetQuery, inside a plugin that installed the JSON-lines, CSV and multipart parsers.
 */
export async function createDatasetFromRequest(
  ctx: service.DatasetContext,
  projectId: string,
  req: FastifyRequest & { query: Query },
): Promise<Dataset> {
  const kind = datasetBodyKind(req);
  if (kind === 'json') return service.createDataset(ctx, projectId, req.body as CreateDataset);
  if (kind === 'multipart') return fromMultipart(ctx, projectId, req);
  const body = uploadStream(req, { maxBytes: ctx.uploadLimit });
  return service.uploadDataset(ctx, projectId, req.query, kind === 'csv' ? csvLines(body) : body);
}
