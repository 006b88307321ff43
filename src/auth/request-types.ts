import type { Permission } from './permissions.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The permission a key needs for this route; routes without one need no key (e.g. /healthz). */
    permission?: Permission;
  }
  interface FastifyRequest {
    principal: import('./authenticator.js').Principal | null;
  }
}
