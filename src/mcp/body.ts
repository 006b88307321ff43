import type { ErrorObject } from 'ajv';
import type { FastifySchema } from 'fastify';
import type { Static, TSchema } from 'typebox';
import { toIssues, validatorCompiler } from '../http/validation.js';
import { ApiError } from '../shared/errors.js';

type Check = ((data: unknown) => boolean) & { errors?: readonly ErrorObject[] | null };

const compiled = new WeakMap<TSchema, Check>();

/**
 * The value checked against the REST route's own schema for that part of a request, by the API's own
 * validator (defaults applied, nothing unstorable): a tool that takes a request body accepts exactly what
 * the route does and answers the route's 422 otherwise.
 */
export function checked<S extends TSchema>(
  schema: S,
  value: unknown,
  part: 'body' | 'querystring',
): Static<S> {
  let check = compiled.get(schema);
  if (!check) {
    check = validatorCompiler({
      schema: schema as FastifySchema,
      method: 'POST',
      url: '/mcp',
      httpPart: part,
    }) as Check;
    compiled.set(schema, check);
  }
  if (!check(value)) throw ApiError.validation(toIssues(part, check.errors ?? []));
  return value as Static<S>;
}
