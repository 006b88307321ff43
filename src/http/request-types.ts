/**
 * How a route's errors are written: `openai` routes answer a validation failure 400 in the envelope (every
 * problem in the message and `details.issues`) so that OpenAI's SDKs show it; `anthropic` routes answer
 * in Anthropic's error shape (`{"type":"error","error":{"type":…,"message":…}}`) and take the key from
 * `x-api-key` too. Other routes follow the service contract (422 `{"detail":[…]}`).
 */
export type ErrorDialect = 'openai' | 'anthropic';

declare module 'fastify' {
  interface FastifyRequest {
    /** A JSON body's text as it arrived (null for other bodies). */
    bodyText: string | null;
  }
  interface FastifyContextConfig {
    dialect?: ErrorDialect;
  }
}
