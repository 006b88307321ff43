export {};

declare module 'fastify' {
  interface FastifyRequest {
    /** A JSON body's text as it arrived (null for other bodies). */
    bodyText: string | null;
  }
}
