import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { createModelCaller, type ModelCaller } from '../../src/llm/call-model.js';
import { CallCanceller } from '../../src/llm/cancel.js';
import type { ResolvedModel } from '../../src/llm/models/types.js';
import type { ChatRequest } from '../../src/llm/types.js';
import { createMemoryModelLimiter } from '../../src/ratelimit/model-limiter-memory.js';
import { ApiError } from '../../src/shared/errors.js';
import { ensureProject } from '../../src/tenancy/projects.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';
import { testInferencePorts } from '../helpers/inference-ports.js';
import { drain, modelAt } from './layer-helpers.js';

/*
 * The one entry of the paid call in the shapes the gateway's routes need (no server of Evalgate): a call
 * forwarded as sent, a stream handed to its consumer, embeddings of a request as sent — each through the
 * real provider layer to a mock upstream on loopback, real budgets and the response cache over the test's
 * database, and the real in-memory model limiter.
 */

let db: FreshDatabase;
let handle: DatabaseHandle;
let mock: MockUpstream;
let projectId: string;
const opened: ReturnType<typeof testInferencePorts>[] = [];

beforeAll(async () => {
  db = await freshDatabase();
  handle = await openDatabase(db.url);
  await handle.migrate();
  projectId = (await ensureProject(handle.db, 'call-model')).id;
  mock = await startMockUpstream({ latencyMs: 20 });
});
afterAll(async () => {
  for (const p of opened) await p.budgets.close();
  await mock?.close();
  await handle?.close();
  await db?.drop();
});

/** 12 prompt and 7 completion tokens at 100 and 1000 USD per million. */
const ACTUAL = (12 * 100 + 7 * 1000) / 1e6;
const PRICES = { inputPricePerMtok: 100, outputPricePerMtok: 1000 };
const USE = { mode: 'use' as const, ttlSeconds: 60 };

function setup(options: { limiter?: boolean } = {}) {
  const ports = testInferencePorts(handle.db);
  opened.push(ports);
  const limiter = options.limiter ? createMemoryModelLimiter() : null;
  const caller: ModelCaller = createModelCaller({
    providers: ports.providers,
    budgets: ports.budgets,
    cache: ports.cache,
    ...(limiter ? { limits: { limiter, concurrency: 1 } } : {}),
  });
  const keyId = `key_${Math.random().toString(36).slice(2)}`;
  const spend = async () => (await ports.budgets.get(projectId, 'key', keyId)).spend?.used_usd ?? 0;
  return { ports, caller, payer: { projectId, keyId }, keyId, spend };
}

const ask = (content: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'mock-gpt',
  messages: [{ role: 'user', content }],
  max_tokens: 10,
  ...extra,
});

describe('the model call, as the gateway calls it', () => {
  it('forwards a call, charges the payer its cost, and answers a repeat from the cache for nothing', async () => {
    const { ports, caller, payer, keyId, spend } = setup();
    await ports.budgets.set(projectId, 'key', keyId, { limit_usd: 1, period: 'total' });
    const model = modelAt(mock.baseUrl, PRICES);
    const request = ask(`forward ${keyId}`);
    const before = mock.stats.requests;
    const started: string[] = [];
    const first = await caller.forward(model, request, {
      payer,
      signal: new CallCanceller(),
      cache: USE,
      requestText: JSON.stringify(request),
      started: () => started.push('first'),
    });
    expect(first.outcome).toEqual({ status: 'miss', savedUsd: 0 });
    expect(JSON.parse(first.value.bodyText).choices[0].message.content).toBe(first.value.text);
    expect(first.value.cost).toBeCloseTo(ACTUAL, 12);
    expect(first.value.attempts).toBe(1);
    expect(await spend()).toBeCloseTo(ACTUAL, 9);
    const again = await caller.forward(model, request, { payer, signal: new CallCanceller(), cache: USE });
    expect(again.outcome).toEqual({ status: 'hit', savedUsd: first.value.cost });
    expect(again.value.cost).toBe(0);
    expect(again.value.bodyText).toBe(first.value.bodyText);
    expect(mock.stats.requests - before).toBe(1);
    expect(await spend()).toBeCloseTo(ACTUAL, 9);
    expect(started).toEqual(['first']);
    // Without a policy the call goes to the upstream, and reports no cache outcome.
    const straight = await caller.forward(model, request, { payer, signal: new CallCanceller() });
    expect(straight.outcome).toBeNull();
    expect(mock.stats.requests - before).toBe(2);
  });

  it('passes the provider layer its options: fallbacks and the charge of each retry', async () => {
    const { caller, payer } = setup();
    const failing = modelAt('http://127.0.0.1:1/v1', { slug: 'gone', ...PRICES });
    const backup = modelAt(mock.baseUrl, { slug: 'backup', ...PRICES });
    const charged: string[] = [];
    const resolved: string[] = [];
    const answer = await caller.forward(failing, ask('fallback'), {
      payer,
      signal: new CallCanceller(),
      upstream: {
        fallbacks: ['backup'],
        resolveFallback: async (slug) => {
          resolved.push(slug);
          return backup;
        },
        beforeRetry: async () => void charged.push('retry'),
      },
    });
    expect(resolved).toEqual(['backup']);
    expect(answer.value.servedBy).toBe('backup');
    expect(answer.value.attempts).toBe(2);
    expect(charged).toEqual(['retry']);
  });

  it('streams through the consumer, pays what the stream cost, and replays a cached answer as a stream', async () => {
    const { ports, caller, payer, keyId, spend } = setup();
    await ports.budgets.set(projectId, 'key', keyId, { limit_usd: 1, period: 'total' });
    const model = modelAt(mock.baseUrl, PRICES);
    const request = ask(`stream ${keyId}`, { stream: true, stream_options: { include_usage: true } });
    const seen: (string | null)[] = [];
    const consumed = await caller.stream(
      model,
      request,
      { payer, signal: new CallCanceller(), cache: USE, upstream: { collect: true } },
      async (opened) => {
        seen.push(opened.outcome?.status ?? null);
        const drained = await drain(opened.value);
        const result = await opened.value.result();
        return { ...result, text: drained.chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('') };
      },
    );
    expect(consumed.text).toBe('Hello from the mock upstream.');
    expect(consumed.cost).toBeCloseTo(ACTUAL, 12);
    expect(await spend()).toBeCloseTo(ACTUAL, 9);
    const before = mock.stats.requests;
    const replayed = await caller.stream(
      model,
      request,
      { payer, signal: new CallCanceller(), cache: USE },
      async (opened) => {
        seen.push(opened.outcome?.status ?? null);
        await drain(opened.value);
        return opened.value.result();
      },
    );
    expect(seen).toEqual(['miss', 'hit']);
    expect(replayed.cost).toBe(0);
    expect(mock.stats.requests).toBe(before);
    expect(await spend()).toBeCloseTo(ACTUAL, 9);
  });

  it('embeds a request as sent, priced by its input tokens, and caches it', async () => {
    const { ports, caller, payer, keyId, spend } = setup();
    await ports.budgets.set(projectId, 'key', keyId, { limit_usd: 1, period: 'total' });
    const model = modelAt(mock.baseUrl, { inputPricePerMtok: 100, outputPricePerMtok: null });
    const request = { model: 'mock-gpt', input: [`one ${keyId}`, 'two'], encoding_format: 'float' };
    const first = await caller.embedRequest(model, request, {
      payer,
      signal: new CallCanceller(),
      cache: USE,
    });
    expect(first.outcome?.status).toBe('miss');
    const body = JSON.parse(first.value.bodyText);
    expect(body.data).toHaveLength(2);
    const tokens = first.value.usage?.prompt_tokens ?? 0;
    expect(tokens).toBeGreaterThan(0);
    expect(first.value.cost).toBeCloseTo((tokens * 100) / 1e6, 12);
    expect(await spend()).toBeCloseTo(first.value.cost, 9);
    const again = await caller.embedRequest(model, request, {
      payer,
      signal: new CallCanceller(),
      cache: USE,
    });
    expect(again.outcome?.status).toBe('hit');
    expect(again.value.bodyText).toBe(first.value.bodyText);
    expect(await spend()).toBeCloseTo(first.value.cost, 9);
  });

  it('refuses a call the budget cannot pay before calling anything, and tells the caller', async () => {
    const { ports, caller, payer, keyId } = setup();
    await ports.budgets.set(projectId, 'key', keyId, { limit_usd: 0, period: 'total' });
    const model = modelAt(mock.baseUrl, PRICES);
    const before = mock.stats.requests;
    const refusals: unknown[] = [];
    const started: string[] = [];
    const options = {
      payer,
      signal: new CallCanceller(),
      refused: async (err: unknown) => void refusals.push(err),
      started: () => started.push('called'),
    };
    await expect(caller.forward(model, ask('refused'), options)).rejects.toMatchObject({
      code: 'budget_exceeded',
    });
    await expect(
      caller.stream(model, ask('refused', { stream: true }), options, async () => {
        throw new Error('not opened');
      }),
    ).rejects.toMatchObject({ code: 'budget_exceeded' });
    await expect(caller.embedRequest(model, { input: 'x' }, options)).rejects.toBeInstanceOf(ApiError);
    expect(refusals).toHaveLength(3);
    expect(started).toEqual([]);
    expect(mock.stats.requests).toBe(before);
  });

  it('takes the model limiter’s permit with the gateway’s canceller: calls of one model beyond its concurrency wait', async () => {
    const { caller, payer } = setup({ limiter: true });
    const model: ResolvedModel = modelAt(mock.baseUrl, { slug: `limited-${Date.now()}`, ...PRICES });
    let running = 0;
    let most = 0;
    const calls = Array.from({ length: 3 }, (_, i) =>
      caller.forward(model, ask(`limited ${i}`), {
        payer,
        signal: new CallCanceller(),
        started: () => {
          running++;
          most = Math.max(most, running);
        },
        spent: () => {
          running--;
        },
      }),
    );
    const answers = await Promise.all(calls);
    expect(answers.map((a) => a.value.text)).toEqual(Array(3).fill('Hello from the mock upstream.'));
    expect(most).toBe(1);
    // A cancelled canceller ends the wait for a permit.
    const held = caller.forward(model, ask('holder'), { payer, signal: new CallCanceller() });
    const canceller = new CallCanceller();
    const waiting = caller.forward(model, ask('waiter'), { payer, signal: canceller });
    canceller.abort();
    await expect(waiting).rejects.toBeDefined();
    await held;
  });
});
