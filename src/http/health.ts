import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { withTimeout } from '../shared/timeout.js';

const Health = Type.Object({ ok: Type.Boolean() }, { additionalProperties: false });

/** Names the dependencies that did not answer, on a 503 (the body stays `{"ok":false}`). */
export const UNAVAILABLE_HEADER = 'X-Evalgate-Unavailable';

/** Names what works but needs attention, on a 200: `run-queue` while live runs have lost their jobs. */
export const DEGRADED_HEADER = 'X-Evalgate-Degraded';

/** A dependency that does not answer within this long counts as down: a health check must answer quickly. */
const PROBE_TIMEOUT_MS = 2_000;

type Probe = () => Promise<unknown>;

/**
 * What this process needs to serve its API: the database always; Redis when it is configured (rate
 * limits, and the run queue with the BullMQ executor). Redis's probes read through the connections the
 * process uses, so a broken connection counts as Redis being down.
 */
/** What the health route checks: the database, and Redis through the connections that use it. */
export interface HealthPorts {
  database: { ping(): Promise<unknown> };
  /** The rate limiter's Redis ping, where it has one. */
  limiter: { ping?(): Promise<unknown> };
  queue: { depth(): Promise<unknown>; lostRuns?(): Promise<string[]> };
  /** Whether Redis is configured, and whether the run queue is on it (the BullMQ executor). */
  redis: { configured: boolean; queue: boolean };
  warn(message: string): void;
}

function probesOf(ports: HealthPorts): Record<string, Probe[]> {
  const probes: Record<string, Probe[]> = { database: [() => ports.database.ping()] };
  const redis: Probe[] = [];
  const { limiter, queue } = ports;
  const pingLimiter = limiter.ping?.bind(limiter);
  if (pingLimiter) redis.push(pingLimiter);
  if (ports.redis.queue) redis.push(() => queue.depth());
  if (ports.redis.configured && redis.length > 0) probes.redis = redis;
  return probes;
}

/**
 * For load balancers and uptime monitors: 200 `{"ok":true}` while every dependency answers, 503
 * `{"ok":false}` otherwise, with the ones that did not in X-Evalgate-Unavailable (e.g. `redis`). Each
 * change of a dependency's state is logged once.
 */
export const healthRoutes: FastifyPluginAsyncTypebox<{ ports: HealthPorts }> = async (app, { ports }) => {
  const probes = probesOf(ports);
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
          if (down.delete(name)) ports.warn(`Health: ${name} answers again`);
          return null;
        } catch (err) {
          if (!down.has(name)) {
            down.add(name);
            ports.warn(`Health: ${name} is unavailable (${err instanceof Error ? err.message : err})`);
          }
          return name;
        }
      }),
    );
    return results.filter((name) => name !== null);
  }

  let lostBefore = 0;
  /** Live runs whose jobs the run queue lost (0 when it cannot lose them, or Redis does not answer). */
  async function lostRuns(): Promise<number> {
    const lostRunsOf = ports.queue.lostRuns?.bind(ports.queue);
    if (!lostRunsOf) return 0;
    let lost = 0;
    try {
      lost = (await withTimeout(lostRunsOf(), PROBE_TIMEOUT_MS, 'no answer')).length;
    } catch {
      return 0;
    }
    if (lost > 0 && lostBefore === 0) ports.warn(`Health: ${lost} live run(s) have lost their queue jobs`);
    if (lost === 0 && lostBefore > 0) ports.warn('Health: every live run has its queue jobs again');
    lostBefore = lost;
    return lost;
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
          `answer in ${UNAVAILABLE_HEADER} (comma-separated: database, redis). With the BullMQ executor, ` +
          `a 200 carries ${DEGRADED_HEADER}: run-queue while live runs have lost their jobs (Redis ` +
          'restarted empty), until the executors have submitted them again.',
        security: [],
        response: { 200: Health, 503: Health },
      },
    },
    async (_req, reply) => {
      const failing = await unavailable();
      if (failing.length === 0) {
        const lost = await lostRuns();
        if (lost > 0) reply.header(DEGRADED_HEADER, `run-queue; ${lost} live run(s) without jobs`);
        return { ok: true };
      }
      return reply.code(503).header(UNAVAILABLE_HEADER, failing.join(', ')).send({ ok: false });
    },
  );
};
