import type { ApiError } from '../shared/errors.js';

/**
 * The edge of a client dialect (a route's `config.dialect`; each dialect's folder under
 * inference/dialects/ has one): a validation failure answers 400 with every problem in the message
 * (`asBadRequest`) so that the dialect's SDKs show it, errors are written in the dialect's shape, and the
 * key may also come in the dialect's own header. Routes without one follow the service contract (the
 * envelope, 422 `{"detail":[…]}`).
 */
export interface RouteDialect {
  /** The error as the dialect's SDKs read it (already a 400 for a validation failure). */
  errorBody(e: ApiError): unknown;
  /** A header that carries the key when no Authorization header came (e.g. Anthropic's `x-api-key`). */
  readonly credentialHeader: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** A JSON body's text as it arrived (null for other bodies). */
    bodyText: string | null;
  }
  interface FastifyContextConfig {
    dialect?: RouteDialect;
  }
}
