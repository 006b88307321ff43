import type { Kysely } from 'kysely';
import { createMemoryCounter } from '../../src/budgets/counter.js';
import { Budgets } from '../../src/budgets/service.js';
import type { Database } from '../../src/db/schema.js';
import type { InferencePorts } from '../../src/gateway/call-runner.js';
import { ResponseCache } from '../../src/llm/cache/cache.js';
import { createSqlCacheStore } from '../../src/llm/cache/store.js';
import type { ResolvedModel } from '../../src/llm/models/types.js';
import { layerFor } from '../llm/layer-helpers.js';

/**
 * The gateway's ports (`InferencePorts`) built from real parts without a server: the provider layer (to
 * whatever base URL the models name), budgets on the in-memory counter over the given database, the
 * response cache in that database, and no task-log writer. Any part can be replaced.
 */
export function testInferencePorts(
  db: Kysely<Database>,
  overrides: Partial<InferencePorts> & { models?: Record<string, ResolvedModel> } = {},
): InferencePorts & { budgets: Budgets } {
  const fail = (message: string) => {
    throw new Error(`unexpected warning: ${message}`);
  };
  const { models = {}, ...rest } = overrides;
  const resolveModel = async (_projectId: string, ref: string) => {
    const model = models[ref];
    if (!model) throw new Error(`no model '${ref}' in this test`);
    return model;
  };
  const budgets = new Budgets({ db, counter: createMemoryCounter({ db, warn: fail }, 10), cacheMs: 0 });
  return {
    providers: layerFor({ retries: 0 }),
    hopId: 'test-hop',
    limiter: { take: async () => ({ allowed: true, limit: 1, remaining: 1, resetAt: 0, retryAfter: 0 }) },
    cache: new ResponseCache(createSqlCacheStore(db, fail)),
    gateway: { db, logWriter: null, recording: false, modelCacheMs: 0, resolveModel },
    ...rest,
    budgets: (rest.budgets as Budgets | undefined) ?? budgets,
  };
}
