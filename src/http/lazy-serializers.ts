import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

/**
 * Fastify's response serializers (fast-json-stringify), each compiled on its route's first answer with
 * that status instead of for every route at start: compiling them all was a fifth of a start's CPU, and
 * most processes (a test, a worker, a gateway replica) answer a handful of routes. The serializer is the
 * one Fastify builds by default, from the same options; only the moment it is built moves.
 */
export function lazySerializers(): ReturnType<typeof SerializerSelector> {
  const build = SerializerSelector();
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options);
    return (route) => {
      let serialize: ((doc: unknown) => string) | null = null;
      return (doc) => {
        serialize ??= compile(route);
        return serialize(doc);
      };
    };
  };
}
