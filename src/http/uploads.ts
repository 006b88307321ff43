import { pipeline, type Readable, Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { ApiError } from '../shared/errors.js';
import { toIssues, validatorCompiler } from './validation.js';

/**
 * Uploads at the edge (datasets, task log imports): the JSON-lines body parser, the choice between a
 * JSON and a JSON-lines body, and the request stream, gunzipped within the upload limit and a cap on
 * the compression ratio. What is done with the lines is the JSON-lines module's (catalog/json-lines.ts).
 */
export const NDJSON_TYPES = [
  'application/x-ndjson',
  'application/jsonl',
  'application/x-jsonlines',
  'application/jsonlines',
];

/**
 * The body of a JSON-lines request: the raw stream, kept out of sight of generic body walkers (schema
 * validation looks at own enumerable properties, and this has none).
 */
export class JsonLinesBody {
  readonly #stream: Readable;
  constructor(stream: Readable) {
    this.#stream = stream;
  }
  get stream(): Readable {
    return this.#stream;
  }
}

/**
 * Hands the raw body stream to the route (only inside the plugin that calls it). Fastify applies its body
 * limit only to bodies it reads itself, so JSON bodies keep EVALGATE_BODY_LIMIT while JSON-lines uploads
 * are bounded by EVALGATE_UPLOAD_LIMIT as they are read.
 */
export function installNdjsonParser(app: FastifyInstance): void {
  app.addContentTypeParser(NDJSON_TYPES, (_req, payload, done) => done(null, new JsonLinesBody(payload)));
}

/** CSV bodies (dataset uploads): handed to the route as a stream, as JSON lines are. */
export const CSV_TYPES = ['text/csv', 'application/csv'];

/** Hands a CSV body's raw stream to the route (only inside the plugin that calls it). */
export function installCsvParser(app: FastifyInstance): void {
  app.addContentTypeParser(CSV_TYPES, (_req, payload, done) => done(null, new JsonLinesBody(payload)));
}

const JSON_TYPE = /^application\/(.+\+)?json$/;

/** Which body a route got: JSON (any application/…json type) or JSON lines; anything else is refused. */
export function bodyKind(req: FastifyRequest): 'json' | 'ndjson' {
  const type = req.mediaType;
  if (type === undefined) throw ApiError.invalid(['body'], 'Field required', 'missing');
  if (NDJSON_TYPES.includes(type)) return 'ndjson';
  if (JSON_TYPE.test(type)) return 'json';
  throw new ApiError(
    'unsupported_media_type',
    `Unsupported Content-Type '${type}'; send application/json or application/x-ndjson`,
  );
}

/**
 * preValidation hook of a route taking JSON or JSON lines. Fastify validates a body against the schema of
 * its exact media type, so JSON sent as another JSON type (`application/vnd.x+json`) is checked here.
 */
export function jsonOrLines(schema: TSchema): (req: FastifyRequest) => Promise<void> {
  let validate: ReturnType<typeof validatorCompiler> | null = null;
  return async (req) => {
    if (bodyKind(req) !== 'json' || req.mediaType === 'application/json') return;
    validate ??= validatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '' });
    if (!validate(req.body)) {
      const errors = (validate as unknown as { errors?: Parameters<typeof toIssues>[1] | null }).errors;
      throw ApiError.validation(toIssues('body', errors ?? []));
    }
  };
}

/**
 * A gzip upload may expand at most this many times its compressed size, once past RATIO_FREE_BYTES of
 * output. Real JSON lines compress 3-30 times; a compression bomb (1 MB of gzip holding 1 GiB of
 * newlines) expands about 1,000 times and costs the server a minute of work per megabyte sent. Data
 * that really is that repetitive can be sent uncompressed.
 */
export const MAX_GZIP_RATIO = 100;
export const RATIO_FREE_BYTES = 1 << 20;

/**
 * Counts what the gunzip stream produces and fails it with a 413 as soon as the output passes `maxBytes`
 * (the upload limit applies to decompressed bytes) or MAX_GZIP_RATIO times the input consumed so far;
 * the pipeline then stops decompressing at once.
 */
function inflationCap(gunzip: { bytesWritten: number }, maxBytes: number): Transform {
  let out = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      out += chunk.length;
      if (out > maxBytes) {
        callback(
          new ApiError('payload_too_large', `Upload exceeds ${maxBytes} bytes once decompressed`, {
            limit: maxBytes,
            decompressed: true,
          }),
        );
        return;
      }
      const consumed = gunzip.bytesWritten;
      if (out > RATIO_FREE_BYTES && out > MAX_GZIP_RATIO * consumed) {
        callback(
          new ApiError(
            'payload_too_large',
            `The gzip upload expands more than ${MAX_GZIP_RATIO} times its compressed size; send it uncompressed`,
            { max_ratio: MAX_GZIP_RATIO, compressed_bytes: consumed, decompressed_bytes: out },
          ),
        );
        return;
      }
      callback(null, chunk);
    },
  });
}

/**
 * The request body stream, decompressed when sent with `Content-Encoding: gzip`, within `maxBytes` of
 * decompressed output and MAX_GZIP_RATIO.
 */
export function uploadStream(req: FastifyRequest, limits: { maxBytes: number }): Readable {
  if (!(req.body instanceof JsonLinesBody)) throw new ApiError('bad_request', 'Expected a JSON-lines body');
  const body = req.body.stream;
  const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding === 'identity') return body;
  if (encoding !== 'gzip') {
    throw new ApiError(
      'unsupported_media_type',
      `Unsupported Content-Encoding '${encoding}'; use gzip or none`,
    );
  }
  const gunzip = createGunzip();
  // Errors of any stage (corrupt gzip, a cap crossed, the client gone) reach the consumer through the last.
  return pipeline(body, gunzip, inflationCap(gunzip, limits.maxBytes), () => {});
}

/** Stream failures the client caused, as the 400 they are (anything else stays a server error). */
export function asUploadError(err: unknown): unknown {
  if (err instanceof ApiError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('Z_')) {
    return new ApiError('bad_request', 'The body is not valid gzip (Content-Encoding: gzip)');
  }
  if (
    code === 'ECONNRESET' ||
    code === 'ERR_STREAM_PREMATURE_CLOSE' ||
    (err as Error)?.message === 'aborted'
  ) {
    return new ApiError('bad_request', 'The upload was interrupted before it ended');
  }
  return err;
}
