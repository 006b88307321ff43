import { randomBytes } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { Redis } from 'ioredis';
import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { testDbKind } from '../helpers/databases.js';
import { waitFor } from '../helpers/wait.js';
import { type Gateway, startGateway } from './gateway-helpers.js';

/*
 * The response cache through the official clients: opt-in per request (X-Evalgate-Cache), per key and per
 * registered model (default TTLs), per run (the `cache` option). Entries live in the database on SQLite and
 * in Redis on the PostgreSQL project (the scale-out shape). The mock upstream counts what reaches it.
 */

const REDIS_URL = process.env.EVALGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const scaleOut: Record<string, string> =
  testDbKind() === 'postgres'
    ? { EVALGATE_REDIS_URL: REDIS_URL, EVALGATE_REDIS_PREFIX: `egcache${randomBytes(4).toString('hex')}` }
    : {};

const USE = { 'X-Evalgate-Cache': 'use' };
const ask = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'priced',
  messages: [{ role: 'user' as const, content }],
  ...extra,
});

let g: Gateway;
let n = 0;
/** A question no other test asked, so that entries of one test never answer another. */
const fresh = (what: string) => `${what} #${++n} ${randomBytes(3).toString('hex')}`;
const upstreamCalls = () => g.mock.stats.requests;

async function chat(client: OpenAI, body: ReturnType<typeof ask>, headers: Record<string, string> = {}) {
  const { data, response } = await client.chat.completions
    .create({ ...body, stream: false }, { headers })
    .withResponse();
  return {
    text: data.choices[0]?.message.content ?? '',
    cache: response.headers.get('x-evalgate-cache'),
    cost: Number(response.headers.get('x-evalgate-cost')),
    logId: response.headers.get('x-evalgate-log-id'),
  };
}

async function streamed(client: OpenAI, body: ReturnType<typeof ask>, headers: Record<string, string> = {}) {
  const { data, response } = await client.chat.completions
    .create({ ...body, stream: true, stream_options: { include_usage: true } }, { headers })
    .withResponse();
  let text = '';
  let usage: unknown = null;
  let finish: string | null = null;
  for await (const chunk of data) {
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, usage, finish, cache: response.headers.get('x-evalgate-cache') };
}

async function logOf(id: string | null) {
  await waitFor(async () => (await g.logs('default')).some((l) => l.id === id), 10_000, `log ${id}`);
  return (await g.logs('default')).find((l) => l.id === id);
}

beforeAll(async () => {
  g = await startGateway(scaleOut);
  const res = await g.h.call('POST', '/v1/models', {
    body: {
      label: 'priced',
      base_url: g.mock.baseUrl,
      upstream_model: 'priced-upstream',
      input_price_per_mtok: 1,
      output_price_per_mtok: 2,
    },
  });
  expect(res.status, res.text).toBe(201);
});
afterAll(async () => {
  await g?.close();
});
beforeEach(() => {
  g.mock.reset();
  g.mock.set({ reply: (req) => `answer to ${req.lastUserText}`, latencyMs: 0 });
});

describe('response cache on the chat route', () => {
  it('answers a repeated request from the cache: one upstream call, the hit recorded at cost 0 with the cost it saved', async () => {
    const client = g.client();
    const body = ask(fresh('capital of Peru'));
    const first = await chat(client, body, USE);
    const second = await chat(client, body, USE);
    expect(upstreamCalls()).toBe(1);
    expect(first.cache).toBe('miss');
    expect(second.cache).toBe('hit');
    expect(second.text).toBe(first.text);
    expect(first.cost).toBeGreaterThan(0);
    expect(second.cost).toBe(0);
    const missLog = await logOf(first.logId);
    const hitLog = await logOf(second.logId);
    expect(missLog.metadata).toMatchObject({ cache: 'miss', route: 'chat' });
    expect(hitLog.cost).toBe(0);
    expect(hitLog.metadata.cache).toBe('hit');
    expect(hitLog.metadata.saved_usd).toBeCloseTo(first.cost, 12);
    expect(hitLog.output).toBe(first.text);
    // Where the entry lives: Redis in scale-out, the database's table embedded (and not both).
    const rows = await g.h.services.db.selectFrom('response_cache').select('key').execute();
    if (scaleOut.EVALGATE_REDIS_URL) {
      const redis = new Redis(REDIS_URL);
      try {
        expect((await redis.keys(`${scaleOut.EVALGATE_REDIS_PREFIX}:cache:*`)).length).toBeGreaterThan(0);
      } finally {
        redis.disconnect();
      }
      expect(rows).toHaveLength(0);
    } else {
      expect(rows.length).toBeGreaterThan(0);
    }
  });

  it('does not cache without opting in, and ignores fields that do not change the answer', async () => {
    const client = g.client();
    const body = ask(fresh('no opt-in'));
    const a = await chat(client, body);
    const b = await chat(client, body);
    expect(upstreamCalls()).toBe(2);
    expect(a.cache).toBeNull();
    expect(b.cache).toBeNull();
    // `user` and `metadata` are left out of the key; a different temperature is another request.
    const keyed = ask(fresh('ignored fields'));
    await chat(client, { ...keyed, user: 'u1' } as never, USE);
    expect((await chat(client, { ...keyed, user: 'u2', metadata: { a: '1' } } as never, USE)).cache).toBe(
      'hit',
    );
    expect((await chat(client, { ...keyed, temperature: 0.5 } as never, USE)).cache).toBe('miss');
    expect(upstreamCalls()).toBe(4);
  });

  it('never answers one project from another project’s entries', async () => {
    const other = await g.h.key(['*'], `other-${randomBytes(3).toString('hex')}`);
    const body = {
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user' as const, content: fresh('shared?') }],
    };
    expect((await chat(g.client(), body as never, USE)).cache).toBe('miss');
    expect((await chat(g.client({ key: other.key }), body as never, USE)).cache).toBe('miss');
    expect((await chat(g.client({ key: other.key }), body as never, USE)).cache).toBe('hit');
    expect(upstreamCalls()).toBe(2);
  });

  it('replays a streamed hit as a stream, from a streamed or a plain miss', async () => {
    const client = g.client();
    const body = ask(fresh('stream me'));
    g.mock.set({ chunkChars: 3 });
    const first = await streamed(client, body, USE);
    const second = await streamed(client, body, USE);
    expect(upstreamCalls()).toBe(1);
    expect([first.cache, second.cache]).toEqual(['miss', 'hit']);
    expect(second.text).toBe(first.text);
    expect(second.text).toContain('answer to');
    expect(second.finish).toBe('stop');
    expect(second.usage).toEqual(first.usage);
    // A plain answer serves a later stream of the same request, and the other way round.
    const plain = ask(fresh('plain first'));
    const p = await chat(client, plain, USE);
    const s = await streamed(client, plain, USE);
    expect(s.cache).toBe('hit');
    expect(s.text).toBe(p.text);
    expect((await chat(client, body, USE)).text).toBe(first.text);
    expect(upstreamCalls()).toBe(2);
    const logs = await g.logs('default');
    const hit = logs.find((l) => l.metadata?.cache === 'hit' && l.metadata?.stream === true);
    expect(hit).toBeDefined();
    expect(hit.cost).toBe(0);
  });

  it('refresh calls the upstream and overwrites the entry', async () => {
    const client = g.client();
    const body = ask(fresh('changing'));
    const first = await chat(client, body, USE);
    g.mock.set({ reply: () => 'a newer answer' });
    const refreshed = await chat(client, body, { 'X-Evalgate-Cache': 'refresh' });
    expect(refreshed.cache).toBe('miss');
    expect(refreshed.text).toBe('a newer answer');
    const after = await chat(client, body, USE);
    expect(after.cache).toBe('hit');
    expect(after.text).toBe('a newer answer');
    expect(after.text).not.toBe(first.text);
    expect(upstreamCalls()).toBe(2);
  });

  it('lets an entry expire after its TTL', async () => {
    const client = g.client();
    const body = ask(fresh('short-lived'));
    const ttl = { ...USE, 'X-Evalgate-Cache-Ttl': '1' };
    expect((await chat(client, body, ttl)).cache).toBe('miss');
    expect((await chat(client, body, USE)).cache).toBe('hit');
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await chat(client, body, USE)).cache).toBe('miss');
    expect(upstreamCalls()).toBe(2);
  });

  it('refuses unknown cache header values with 400 naming the header', async () => {
    const client = g.client();
    for (const headers of [{ 'X-Evalgate-Cache': 'always' }, { ...USE, 'X-Evalgate-Cache-Ttl': '-3' }]) {
      const err = await chat(client, ask('x'), headers).catch((e) => e);
      expect(err).toBeInstanceOf(Error);
      expect(err.status).toBe(400);
      expect(err.message).toMatch(/X-Evalgate-Cache/);
    }
    expect(upstreamCalls()).toBe(0);
  });

  it('refuses a wrong key (401) and another project’s model (404), cache or not', async () => {
    const bad = await chat(g.client({ key: 'eg_wrong' }), ask('x'), USE).catch((e) => e);
    expect(bad.status).toBe(401);
    const other = await g.h.key(['*'], `stranger-${randomBytes(3).toString('hex')}`);
    const missing = await chat(g.client({ key: other.key }), ask('x'), USE).catch((e) => e);
    expect(missing.status).toBe(404);
    expect(upstreamCalls()).toBe(0);
  });
});

describe('default TTLs of keys and models', () => {
  it('caches every call of a key created with cache_ttl_seconds; `off` opts out', async () => {
    const created = await g.h.call('POST', '/v1/api-keys', {
      body: { name: 'cached', cache_ttl_seconds: 60 },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.cache_ttl_seconds).toBe(60);
    const client = g.client({ key: created.body.key });
    const body = ask(fresh('key default'));
    expect((await chat(client, body)).cache).toBe('miss');
    expect((await chat(client, body)).cache).toBe('hit');
    expect((await chat(client, body, { 'X-Evalgate-Cache': 'off' })).cache).toBeNull();
    expect(upstreamCalls()).toBe(2);
    const listed = await g.h.call('GET', '/v1/api-keys?limit=100');
    expect(listed.body.data.find((k: any) => k.id === created.body.id).cache_ttl_seconds).toBe(60);
    const bad = await g.h.call('POST', '/v1/api-keys', { body: { name: 'bad', cache_ttl_seconds: 0 } });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    expect(bad.text).toContain('cache_ttl_seconds');
  });

  it('caches every call to a model registered with cache_ttl_seconds until the TTL is removed', async () => {
    const label = `ttl-model-${randomBytes(3).toString('hex')}`;
    const reg = await g.h.call('POST', '/v1/models', {
      body: { label, base_url: g.mock.baseUrl, upstream_model: 'm', cache_ttl_seconds: 120 },
    });
    expect(reg.status, reg.text).toBe(201);
    expect(reg.body.cache_ttl_seconds).toBe(120);
    const client = g.client();
    const body = { ...ask(fresh('model default')), model: label };
    expect((await chat(client, body)).cache).toBe('miss');
    expect((await chat(client, body)).cache).toBe('hit');
    const patched = await g.h.call('PATCH', `/v1/models/${label}`, { body: { cache_ttl_seconds: null } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.cache_ttl_seconds).toBeNull();
    // Resolved models are cached briefly by the gateway: wait until the change is seen.
    await waitFor(async () => (await chat(client, body)).cache === null, 15_000, 'model TTL removed');
    const bad = await g.h.call('PATCH', `/v1/models/${label}`, { body: { cache_ttl_seconds: 'soon' } });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    expect(bad.text).toContain('cache_ttl_seconds');
  });
});

describe('response cache on the other routes', () => {
  it('serves Responses, Messages and embeddings calls from the cache', async () => {
    const client = g.client();
    const input = fresh('responses route');
    const r1 = await client.responses.create({ model: 'priced', input }, { headers: USE }).withResponse();
    const r2 = await client.responses.create({ model: 'priced', input }, { headers: USE }).withResponse();
    expect([
      r1.response.headers.get('x-evalgate-cache'),
      r2.response.headers.get('x-evalgate-cache'),
    ]).toEqual(['miss', 'hit']);
    expect(r2.data.output_text).toBe(r1.data.output_text);
    expect(upstreamCalls()).toBe(1);

    const anthropic = new Anthropic({ baseURL: g.h.url, apiKey: g.h.admin.key, maxRetries: 0 });
    const msg = {
      model: 'priced',
      max_tokens: 50,
      messages: [{ role: 'user' as const, content: fresh('messages') }],
    };
    const m1 = await anthropic.messages.create(msg, { headers: USE }).withResponse();
    const m2 = await anthropic.messages.create(msg, { headers: USE }).withResponse();
    expect(m2.response.headers.get('x-evalgate-cache')).toBe('hit');
    expect(m2.data.content).toEqual(m1.data.content);
    expect(upstreamCalls()).toBe(2);

    const text = fresh('embed me');
    const e1 = await client.embeddings
      .create({ model: 'priced', input: text }, { headers: USE })
      .withResponse();
    const e2 = await client.embeddings
      .create({ model: 'priced', input: text }, { headers: USE })
      .withResponse();
    expect(e2.response.headers.get('x-evalgate-cache')).toBe('hit');
    expect(e2.data.data[0]?.embedding).toEqual(e1.data.data[0]?.embedding);
    expect(upstreamCalls()).toBe(3);
  });
  it('replays a streamed hit in the Responses and Messages events', async () => {
    const client = g.client();
    const input = fresh('responses stream');
    const streamText = async () => {
      const { data, response } = await client.responses
        .create({ model: 'priced', input, stream: true }, { headers: USE })
        .withResponse();
      let text = '';
      let completed = false;
      for await (const event of data) {
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.completed') completed = true;
      }
      return { text, completed, cache: response.headers.get('x-evalgate-cache') };
    };
    const r1 = await streamText();
    const r2 = await streamText();
    expect([r1.cache, r2.cache]).toEqual(['miss', 'hit']);
    expect(r2.completed).toBe(true);
    expect(r2.text).toBe(r1.text);
    expect(r2.text).toContain('answer to');
    const anthropic = new Anthropic({ baseURL: g.h.url, apiKey: g.h.admin.key, maxRetries: 0 });
    const msg = {
      model: 'priced',
      max_tokens: 50,
      messages: [{ role: 'user' as const, content: fresh('m stream') }],
    };
    const texts: string[] = [];
    for (let i = 0; i < 2; i++) {
      const stream = anthropic.messages.stream(msg, { headers: USE });
      const final = await stream.finalMessage();
      texts.push(final.content.map((c) => (c.type === 'text' ? c.text : '')).join(''));
    }
    expect(texts[1]).toBe(texts[0]);
    expect(texts[0]).toContain('answer to');
    expect(upstreamCalls()).toBe(2);
  });
});

describe('runs with the cache option', () => {
  it('re-running a run costs 0 for the same generation and judge calls', async () => {
    g.mock.set({
      reply: (req) =>
        req.body.model === 'judge-upstream'
          ? { json: { score: 1, reasoning: 'fine' } }
          : `gen:${req.lastUserText}`,
    });
    const judgeModel = await g.h.call('POST', '/v1/models', {
      body: {
        label: 'cache-judge',
        base_url: g.mock.baseUrl,
        upstream_model: 'judge-upstream',
        input_price_per_mtok: 1,
        output_price_per_mtok: 2,
      },
    });
    expect(judgeModel.status, judgeModel.text).toBe(201);
    const items = [{ input: fresh('q1') }, { input: fresh('q2') }, { input: fresh('q3') }];
    expect((await g.h.call('POST', '/v1/datasets', { body: { label: 'cache-ds', items } })).status).toBe(201);
    const ev = await g.h.call('POST', '/v1/evaluators', {
      body: {
        type: 'judge',
        name: 'cache-judge-ev',
        model: 'cache-judge',
        prompt: 'Rate: {{output}}',
        pass_threshold: 0.5,
      },
    });
    expect(ev.status, ev.text).toBe(201);
    const body = {
      container: 'default',
      evaluators: [ev.body.id],
      sample: { type: 'generate', models: ['priced'] },
      ground_truth: { type: 'dataset', dataset: 'cache-ds' },
      cache: { ttl_seconds: 600 },
    };
    const run = async () => {
      const created = await g.h.call('POST', '/v1/evaluation/runs', { body });
      expect(created.status, created.text).toBe(201);
      await waitFor(
        async () =>
          ['completed', 'error', 'cancelled'].includes(
            (await g.h.call('GET', `/v1/evaluation/runs/${created.body.id}`)).body.status,
          ),
        30_000,
        'run ended',
      );
      const done = await g.h.call('GET', `/v1/evaluation/runs/${created.body.id}`);
      expect(done.body.status, JSON.stringify(done.body.error)).toBe('completed');
      return done.body;
    };
    const first = await run();
    const paid = upstreamCalls();
    expect(paid).toBe(6);
    expect(first.spend).toBeGreaterThan(0);
    expect(first.results.overall.avg_score).toBe(1);
    const again = await run();
    expect(upstreamCalls()).toBe(paid);
    expect(again.spend).toBe(0);
    expect(again.results.overall.avg_score).toBe(1);
    // Without the option the same run pays again.
    const { cache: _cache, ...uncached } = body;
    const created = await g.h.call('POST', '/v1/evaluation/runs', { body: uncached });
    expect(created.status).toBe(201);
    await waitFor(() => upstreamCalls() === 2 * paid, 30_000, 'uncached run called the upstream');
    const bad = await g.h.call('POST', '/v1/evaluation/runs', {
      body: { ...body, cache: { mode: 'sometimes' } },
    });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    expect(bad.text).toContain('cache');
  });
});
