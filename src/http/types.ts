import type { Permission } from '../auth/permissions.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The permission a key needs for this route; routes without one need no key (e.g. /healthz). */
    permission?: Permission;
  }
  interface FastifyRequest {
    principal: import('../auth/authenticator.js').Principal | null;
    /** A JSON body's text as it arrived (null for other bodies). */
    bodyText: string | null;
  }
}
