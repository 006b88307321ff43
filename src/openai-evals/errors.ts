import type { FastifyInstance } from 'fastify';
import { isUnstorableError, toIssues } from '../http/validation.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';

/**
 * OpenAI's convention for an invalid request: 400 in the envelope, every problem in the message (which
 * the SDKs' BadRequestError shows) and in `details.issues`.
 */
export function badRequest(issues: readonly ValidationIssue[]): ApiError {
  const where = (i: ValidationIssue) => i.loc.filter((k) => k !== 'body').join('.');
  const message = issues.map((i) => `${where(i) || 'body'}: ${i.msg}`).join('; ');
  return new ApiError('bad_request', `Invalid request: ${message}`, {
    issues: issues.map((i) => ({ loc: i.loc, msg: i.msg, type: i.type })),
  });
}

/**
 * In an OpenAI-shaped plugin: schema failures of the query string and path answer 400 like every other
 * invalid request. Bodies are checked by the routes themselves, which name each problem precisely, except
 * for values no database stores as sent (U+0000, lone surrogates, infinities), found anywhere in a body
 * that passed its schema: those answer 400 here, before a route could hand them to the database.
 */
export function installOpenAiValidation(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    route.attachValidation = true;
  });
  app.addHook('preHandler', async (req) => {
    const failed = req.validationError;
    const part = failed?.validationContext;
    if (!failed?.validation || !part) return;
    const errors = failed.validation as Parameters<typeof toIssues>[1];
    if (part !== 'body') throw badRequest(toIssues(part, errors));
    const unstorable = errors.filter(isUnstorableError);
    if (unstorable.length > 0) throw badRequest(toIssues('body', unstorable));
  });
}
