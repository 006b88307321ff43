import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { ApiError } from '../shared/errors.js';
import './request-types.js';

/** Deeper documents are refused: nothing the API takes needs them, and they make later steps recurse. */
export const MAX_JSON_DEPTH = 64;

function tooDeep(value: unknown): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > MAX_JSON_DEPTH) return true;
    for (const child of Object.values(v))
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}

export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') throw new ApiError('invalid_json', 'Request body is empty; send a JSON document');
  let value: unknown;
  try {
    value = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    const detail = err instanceof Error ? err.message : 'parse error';
    throw new ApiError('invalid_json', `Request body is not valid JSON: ${detail}`);
  }
  if (tooDeep(value)) throw new ApiError('invalid_json', `JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  return value;
}

/**
 * JSON bodies are read as sent: a compressed one would be parsed as its compressed bytes, so any
 * Content-Encoding but identity is refused (JSON-lines uploads take gzip; see http/uploads.ts).
 */
function checkEncoding(req: FastifyRequest): void {
  const encoding = req.headers['content-encoding'];
  if (encoding === undefined || encoding.trim().toLowerCase() === 'identity') return;
  throw new ApiError(
    'unsupported_media_type',
    `Content-Encoding '${encoding}' is not accepted for JSON bodies; send them uncompressed (gzip is taken by JSON-lines uploads)`,
  );
}

/**
 * The body's text. Bytes that are not UTF-8 are refused rather than read as U+FFFD: what is accepted is
 * stored exactly as sent.
 */
export function bodyText(bytes: Buffer): string {
  if (!isUtf8(bytes)) throw new ApiError('invalid_json', 'Request body is not valid UTF-8');
  return bytes.toString('utf8');
}

/** Methods whose requests need no body. */
const BODILESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

/** JSON is the only media type of the API unless a route adds its own (e.g. JSON lines uploads). */
export function installJsonParser(app: FastifyInstance): void {
  app.decorateRequest('bodyText', null);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    /^application\/(.+\+)?json(\s*;.*)?$/i,
    { parseAs: 'buffer' },
    (req, body, done) => {
      try {
        checkEncoding(req);
        const text = bodyText(body as Buffer);
        // A request that carries no body but labels it JSON (the Python `openai` package's DELETE, and its
        // POST to a route that takes no body, such as a cancel) has no body, rather than a bad one.
        if (text === '' && (BODILESS.has(req.method) || req.routeOptions.schema?.body === undefined)) {
          done(null, undefined);
          return;
        }
        const value = parseJsonBody(text);
        req.bodyText = text;
        done(null, value);
      } catch (err) {
        done(err as Error, undefined);
      }
    },
  );
}
