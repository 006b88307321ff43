import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { type CachePolicy, ResponseCache } from '../../src/llm/cache/cache.js';
import { HOT_HOLD_MS } from '../../src/llm/cache/hot.js';
import { type CacheStore, createSqlCacheStore } from '../../src/llm/cache/store.js';
import type { ProviderLayer } from '../../src/llm/provider-layer.js';
import { recordedOutput } from '../../src/llm/recorded-output.js';
import type { ChatRequest } from '../../src/llm/types.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';
import { drain, layerFor, modelAt } from '../llm/layer-helpers.js';

/*
 * What a cache hit costs: it answers from the stored bytes without touching the provider layer (no
 * upstream request is built), and, once an entry was read or written, without asking the store or
 * checking the answer again — for at most HOT_HOLD_MS, after which a refresh made by another process
 * (another ResponseCache over the same database) shows. Real provider layer to the mock upstream, real
 * store in the test's database.
 */

let db: FreshDatabase;
let handle: DatabaseHandle;
let mock: MockUpstream;
const USE: CachePolicy = { mode: 'use', ttlSeconds: 60 };
const REFRESH: CachePolicy = { mode: 'refresh', ttlSeconds: 60 };
const PROJECT = 'proj_cache_hit_path';

beforeAll(async () => {
  db = await freshDatabase();
  handle = await openDatabase(db.url);
  await handle.migrate();
  mock = await startMockUpstream({ record: false });
});
afterAll(async () => {
  await mock?.close();
  await handle?.close();
  await db?.drop();
});

/** The provider layer with a count of every call of any of its methods. */
function countedLayer(): { layer: ProviderLayer; calls: () => number } {
  const real = layerFor({ retries: 0 });
  let calls = 0;
  const layer = new Proxy(real, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { layer, calls: () => calls };
}

/** The store with a count of its reads. */
function countedStore(): { store: CacheStore; reads: () => number } {
  const store = createSqlCacheStore(handle.db, (m) => {
    throw new Error(`unexpected warning: ${m}`);
  });
  let reads = 0;
  return {
    store: {
      ...store,
      get: (projectId, key) => {
        reads++;
        return store.get(projectId, key);
      },
    },
    reads: () => reads,
  };
}

const ask = (content: string): ChatRequest => ({ model: 'm', messages: [{ role: 'user', content }] });

describe('cache hit path', () => {
  it('answers hits, plain and streamed, from the stored bytes without touching the provider layer or the store', async () => {
    const { layer, calls } = countedLayer();
    const { store, reads } = countedStore();
    const cache = new ResponseCache(store);
    const model = modelAt(mock.baseUrl);
    const request = ask(`hit path ${Date.now()}`);
    const miss = await cache.complete(PROJECT, model, 'chat', request, USE, () =>
      layer.complete(model, request),
    );
    expect(miss.cache.status).toBe('miss');
    expect(calls()).toBe(1);
    const readsAfterMiss = reads();

    for (let i = 0; i < 20; i++) {
      const hit = await cache.complete(PROJECT, model, 'chat', request, USE, () =>
        layer.complete(model, request),
      );
      expect(hit.cache).toEqual({ status: 'hit', savedUsd: miss.result.cost });
      // The bytes the upstream answered, as they were stored: nothing re-encoded.
      expect(hit.result.bodyText).toBe(miss.result.bodyText);
      expect(hit.result.text).toBe(miss.result.text);
      // The task log's output, made once for the entry rather than from a parse per hit.
      expect(hit.result.output).toBe(recordedOutput(miss.result.body));
      expect(hit.result.cost).toBe(0);
      expect(hit.result.attempts).toBe(0);
    }
    const streamed = await cache.stream(PROJECT, model, { ...request, stream: true }, USE, () =>
      layer.stream(model, { ...request, stream: true }),
    );
    expect(streamed.cache.status).toBe('hit');
    const replay = await drain(streamed.stream);
    expect(replay.done).toBe(true);
    expect(replay.chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe(miss.result.text);
    // Not one call of the provider layer after the miss, and the store was not asked again.
    expect(calls()).toBe(1);
    expect(reads()).toBe(readsAfterMiss);
  });

  it('gives every hit a body of its own: a reader that changes it does not change the next hit', async () => {
    const { layer } = countedLayer();
    const cache = new ResponseCache(countedStore().store);
    const model = modelAt(mock.baseUrl);
    const request = ask(`own body ${Date.now()}`);
    await cache.complete(PROJECT, model, 'chat', request, USE, () => layer.complete(model, request));
    const first = await cache.complete(PROJECT, model, 'chat', request, USE, () =>
      layer.complete(model, request),
    );
    (first.result.body as { choices: unknown[] }).choices = [];
    const second = await cache.complete(PROJECT, model, 'chat', request, USE, () =>
      layer.complete(model, request),
    );
    expect((second.result.body as { choices: unknown[] }).choices).toHaveLength(1);
  });

  it('answers a repeat of a streamed miss as a hit as soon as its client has the answer, before the store has it', async () => {
    const sql = countedStore().store;
    // The store's write is held until released: the client's stream has ended before it.
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    let written = false;
    const store: CacheStore = {
      ...sql,
      set: async (...args) => {
        await held;
        await sql.set(...args);
        written = true;
      },
    };
    const cache = new ResponseCache(store);
    const model = modelAt(mock.baseUrl);
    const request: ChatRequest = { ...ask(`streamed repeat ${Date.now()}`), stream: true };
    const miss = await cache.stream(PROJECT, model, request, USE, () =>
      layerFor({ retries: 0 }).stream(model, request, { collect: true }),
    );
    let ended!: () => void;
    const clientDone = new Promise<void>((r) => {
      ended = r;
    });
    const piping = miss.stream.pipe({ write: () => true, drained: async () => {}, end: () => ended() });
    await clientDone;
    const repeat = await cache.stream(PROJECT, model, request, USE, () => {
      throw new Error('the repeat asked the upstream');
    });
    expect(repeat.cache.status).toBe('hit');
    expect(written).toBe(false);
    release();
    await piping;
    expect(written).toBe(true);
    // And once written, another process finds it in the store.
    const elsewhere = new ResponseCache(countedStore().store);
    const found = await elsewhere.stream(PROJECT, model, request, USE, () => {
      throw new Error('the store did not have it');
    });
    expect(found.cache.status).toBe('hit');
  });

  it('shows a refresh made by another process within the hold time, and one made here at once', async () => {
    const here = new ResponseCache(countedStore().store);
    const elsewhere = new ResponseCache(countedStore().store);
    const model = modelAt(mock.baseUrl);
    const request = ask(`refresh elsewhere ${Date.now()}`);
    const answer = (text: string) => async () => {
      mock.set({ reply: () => text });
      return layerFor({ retries: 0 }).complete(model, request);
    };
    await here.complete(PROJECT, model, 'chat', request, USE, answer('first'));
    expect(
      (await elsewhere.complete(PROJECT, model, 'chat', request, USE, answer('never'))).result.text,
    ).toBe('first');
    await here.complete(PROJECT, model, 'chat', request, REFRESH, answer('second'));
    // Here at once; elsewhere once its hold of the first answer is over.
    expect((await here.complete(PROJECT, model, 'chat', request, USE, answer('never'))).result.text).toBe(
      'second',
    );
    await new Promise((r) => setTimeout(r, HOT_HOLD_MS + 100));
    const later = await elsewhere.complete(PROJECT, model, 'chat', request, USE, answer('never'));
    expect(later.cache.status).toBe('hit');
    expect(later.result.text).toBe('second');
    mock.reset();
  });
});
