import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Deps } from '../deps.js';
import { withTimeout } from '../shared/timeout.js';

const Health = Type.Object({ ok: Type.Boolean() }, { additionalProperties: false });

/** Names the dependencies that did not answer, on a 503 (the body stays `{"ok":false}`). */
export const UNAVAILABLE_HEADER = 'X-Evalgate-Unavailable';

/** A dependency that does not answer within this long counts as down: a health check must answer quickly. */
const PROBE_TIMEOUT_MS = 2_000;

type Probe = () => Promise<unknown>;

/**
 * What this process needs to serve its API: the database always; Redis when it is configured (rate
 * limits, and the run queue with the BullMQ executor). Redis's probes read through the connections the
 * process uses, so a broken connection counts as Redis being down.
 */
function probesOf(deps: Deps): Record<string, Probe[]> {
  const probes: Record<string, Probe[]> = { database: [() => deps.database.ping()] };
  const redis: Probe[] = [];
  const { limiter, queue } = deps;
  const pingLimiter = limiter.ping?.bind(limiter);
  if (pingLimiter) redis.push(pingLimiter);
  if (deps.config.runs.executor === 'bullmq') redis.push(() => queue.depth());
  if (deps.config.redisUrl && redis.length > 0) probes.redis = redis;
  return probes;
}

/**
 * For load balancers and uptime monitors: 200 `{"ok":true}` while every dependency answers, 503
 * `{"ok":false}` otherwise, with the ones that did not in X-Evalgate-Unavailable (e.g. `redis`). Each
 * change of a dependency's state is logged once.
 */
export const healthRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  const probes = probesOf(deps);
  const down = new Set<string>();

  async function unavailable(): Promise<string[]> {
    const names = Object.keys(probes);
    const results = await Promise.all(
      names.map(async (name) => {
        try {
          await Promise.all(
            probes[name]!.map((probe) =>
              withTimeout(probe(), PROBE_TIMEOUT_MS, `no answer within ${PROBE_TIMEOUT_MS} ms`),
            ),
          );
          if (down.delete(name)) deps.logger.warn(`Health: ${name} answers again`);
          return null;
        } catch (err) {
          if (!down.has(name)) {
            down.add(name);
            deps.logger.warn(`Health: ${name} is unavailable (${err instanceof Error ? err.message : err})`);
          }
          return name;
        }
      }),
    );
    return results.filter((name) => name !== null);
  }

  app.get(
    '/healthz',
    {
      schema: {
        tags: ['health'],
        summary: 'Health check',
        description:
          '200 while every dependency of the process answers: the database, and Redis when configured ' +
          '(rate limits, the BullMQ run queue). 503 otherwise, naming the dependencies that did not ' +
          `answer in ${UNAVAILABLE_HEADER} (comma-separated: database, redis).`,
        security: [],
        response: { 200: Health, 503: Health },
      },
    },
    async (_req, reply) => {
      const failing = await unavailable();
      if (failing.length === 0) return { ok: true };
      return reply.code(503).header(UNAVAILABLE_HEADER, failing.join(', ')).send({ ok: false });
    },
  );
};
