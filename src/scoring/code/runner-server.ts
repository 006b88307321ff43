import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { type ScoreInput, type Scorer, ScorerSetupError } from '../types.js';
import { checkSource } from './check-source.js';
import {
  cappedLimits,
  RUNNER_BODY_LIMIT,
  WIRE_SCHEMAS,
  type WireEvaluator,
  type WireLimits,
} from './runner-wire.js';
import { type CodeScorerOptions, createCodeScorer, sandboxStatusOf } from './scorer.js';

export interface SandboxRunnerOptions {
  /** The runner's own code evaluator settings (its limits cap what clients ask for), with its runtime. */
  code: CodeScorerOptions & { runtime: NonNullable<CodeScorerOptions['runtime']> };
  /** The shared secret every request but /healthz must carry as a bearer token. */
  token: string;
  /** A scorer no client used for this long is closed (its client makes a new one if it comes back). */
  idleMs?: number;
}

interface Held {
  scorer: Scorer;
  busy: number;
  usedAt: number;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

function refuse(reply: FastifyReply, status: number, code: string, message: string) {
  return reply.code(status).send({ error: { code, message } });
}

/**
 * The sandbox runner: runs code evaluators for the API and run workers of a deployment that cannot
 * sandbox them itself (containers without the privileges bubblewrap needs). It holds the sandbox, the
 * requirements' virtualenvs and the workers; it has no database and no provider credentials.
 */
export function createSandboxRunner(options: SandboxRunnerOptions): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: RUNNER_BODY_LIMIT });
  const expected = digest(options.token);
  const scorers = new Map<string, Held>();
  const idleMs = options.idleMs ?? 600_000;
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, held] of scorers) {
        if (held.busy > 0 || now - held.usedAt < idleMs) continue;
        scorers.delete(id);
        void held.scorer.close().catch(() => {});
      }
    },
    Math.max(1000, Math.min(30_000, idleMs / 2)),
  );
  sweep.unref();

  app.addHook('onRequest', async (request, reply) => {
    if (request.url === '/healthz') return;
    const header = request.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice(7) : '';
    if (token === '' || !timingSafeEqual(digest(token), expected)) {
      return refuse(reply, 401, 'unauthorized', 'the sandbox runner needs its token (Bearer)');
    }
  });
  app.setErrorHandler((err: { statusCode?: number; message: string }, _request, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    return refuse(reply, status, status === 500 ? 'internal_error' : 'bad_request', err.message);
  });

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/v1/status', async () => {
    const status = await sandboxStatusOf(options.code);
    return status.available || options.code.allowUnsafe ? { available: true } : status;
  });

  app.post<{ Body: { source: string | null; requirements?: string[] | null } }>(
    '/v1/check',
    { schema: { body: WIRE_SCHEMAS.check } },
    async (request) => checkSource(options.code.python, request.body),
  );

  app.post<{ Body: { evaluator: WireEvaluator; limits: WireLimits } }>(
    '/v1/scorers',
    { schema: { body: WIRE_SCHEMAS.scorer } },
    async (request, reply) => {
      const { evaluator, limits } = request.body;
      const own = options.code;
      const capped = cappedLimits(own.sandbox.limits, own.timeoutMs, limits);
      const code: CodeScorerOptions = {
        ...own,
        sandbox: { ...own.sandbox, limits: capped.limits },
        timeoutMs: capped.timeoutMs,
      };
      try {
        const scorer = await createCodeScorer(code, evaluator);
        const id = randomBytes(12).toString('hex');
        scorers.set(id, { scorer, busy: 0, usedAt: Date.now() });
        return reply.code(201).send({ id });
      } catch (err) {
        if (!(err instanceof ScorerSetupError)) throw err;
        return refuse(reply, 422, err.code, err.message);
      }
    },
  );

  app.post<{ Params: { id: string }; Body: { inputs: ScoreInput[] } }>(
    '/v1/scorers/:id/batches',
    { schema: { body: WIRE_SCHEMAS.batch } },
    async (request, reply) => {
      const held = scorers.get(request.params.id);
      if (!held)
        return refuse(reply, 404, 'scorer_not_found', 'no such scorer (closed, or the runner restarted)');
      // The client gone (its run cancelled, the process stopped): the batch's workers are stopped.
      const abort = new AbortController();
      reply.raw.on('close', () => {
        if (!reply.raw.writableFinished) abort.abort(new Error('the client went away'));
      });
      held.busy++;
      try {
        return { outcomes: await held.scorer.scoreBatch(request.body.inputs, abort.signal) };
      } finally {
        held.busy--;
        held.usedAt = Date.now();
      }
    },
  );

  app.delete<{ Params: { id: string } }>('/v1/scorers/:id', async (request, reply) => {
    const held = scorers.get(request.params.id);
    scorers.delete(request.params.id);
    await held?.scorer.close();
    return reply.code(204).send();
  });

  app.addHook('onClose', async () => {
    clearInterval(sweep);
    const all = [...scorers.values()];
    scorers.clear();
    await Promise.all(all.map((h) => h.scorer.close().catch(() => {})));
    options.code.runtime.close();
  });
  return app;
}
