import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, registerStubModel, startHarness, type TestKey } from '../helpers/harness.js';

// Tenancy, permissions and bad input on the review routes: another project's key sees nothing (404), a
// key without review:write cannot submit, a score outside the rubric's scale is a 422 naming it.

let h: Harness;
let other: TestKey;
let reader: TestKey;
let queueId: string;
let itemId: string;
let reviewId: string;
let evaluatorId: string;

beforeAll(async () => {
  h = await startHarness();
  await registerStubModel(h, 'm');
  const ev = await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'ordinal',
      model: 'm',
      prompt: 'Rate {{output}}',
      scale: { type: 'ordinal', min: 1, max: 5 },
    },
  });
  expect(ev.status, ev.text).toBe(201);
  evaluatorId = ev.body.id;
  await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'pf',
      model: 'm',
      prompt: 'Is {{output}} fine?',
      scale: { type: 'pass_fail' },
    },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const log = await h.call('POST', '/v1/containers/c/logs', {
    body: [{ model: 'x', input: [{ role: 'user', content: 'hi' }], output: 'hello' }],
  });
  expect(log.status, log.text).toBeLessThan(300);
  const logs = await h.call('GET', '/v1/containers/c/logs');
  const logId = logs.body.data[0].id;
  const q = await h.call('POST', '/v1/annotation-queues', {
    body: { name: 'q', evaluators: ['ordinal', 'pf'] },
  });
  expect(q.status, q.text).toBe(201);
  queueId = q.body.id;
  const added = await h.call('POST', '/v1/annotation-queues/q/items', { body: { task_logs: [logId] } });
  expect(added.body.added).toBe(1);
  const items = await h.call('GET', '/v1/annotation-queues/q/items');
  itemId = items.body.data[0].id;
  const review = await h.call('POST', `/v1/annotation-queues/q/items/${itemId}/review`, {
    body: {
      scores: [
        { evaluator: 'ordinal', score: 4 },
        { evaluator: 'pf', passed: true },
      ],
    },
  });
  expect(review.status, review.text).toBe(201);
  reviewId = review.body.reviews[0].id;
  other = await h.key(['*'], 'elsewhere');
  reader = await h.key(['review:read']);
});

afterAll(async () => {
  await h?.close();
});

describe('review tenancy', () => {
  it("answers 404 to another project's key on queues, items, reviews and agreement", async () => {
    const k = { key: other.key };
    const calls: [string, string, unknown?][] = [
      ['GET', `/v1/annotation-queues/${queueId}`],
      ['GET', '/v1/annotation-queues/q'],
      ['PATCH', `/v1/annotation-queues/${queueId}`, { description: 'x' }],
      ['DELETE', `/v1/annotation-queues/${queueId}`],
      ['GET', `/v1/annotation-queues/${queueId}/items`],
      ['GET', `/v1/annotation-queues/${queueId}/items/${itemId}`],
      ['POST', `/v1/annotation-queues/${queueId}/items`, { task_logs: [] }],
      ['POST', `/v1/annotation-queues/${queueId}/claim`],
      [
        'POST',
        `/v1/annotation-queues/${queueId}/items/${itemId}/review`,
        { scores: [{ evaluator: 'ordinal', score: 3 }] },
      ],
      ['GET', `/v1/annotation-queues/${queueId}/reviews`],
      ['POST', `/v1/annotation-queues/${queueId}/reviews/${reviewId}/correct`, { score: 2 }],
      ['GET', `/v1/annotation-queues/${queueId}/agreement`],
      ['GET', `/v1/evaluators/${evaluatorId}/agreement`],
      ['POST', `/v1/annotation-queues/${queueId}/export`, { label: 'x' }],
    ];
    for (const [method, path, body] of calls) {
      const res = await h.call(method, path, { ...k, body });
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const list = await h.call('GET', '/v1/annotation-queues', k);
    expect(list.body).toMatchObject({ data: [], total: 0 });
  });

  it('lets a key without review:write read but not submit, claim or correct', async () => {
    const k = { key: reader.key };
    expect((await h.call('GET', '/v1/annotation-queues/q', k)).status).toBe(200);
    for (const [method, path, body] of [
      [
        'POST',
        `/v1/annotation-queues/q/items/${itemId}/review`,
        { scores: [{ evaluator: 'ordinal', score: 3 }] },
      ],
      ['POST', '/v1/annotation-queues/q/claim', undefined],
      ['POST', `/v1/annotation-queues/q/reviews/${reviewId}/correct`, { score: 2 }],
      ['POST', '/v1/annotation-queues', { name: 'n', evaluators: ['ordinal'] }],
    ] as const) {
      const res = await h.call(method, path, { ...k, body });
      expect(res.status, path).toBe(403);
      expect(res.body.error.details.required).toBe('review:write');
    }
    const noRead = await h.key(['evaluators:read']);
    expect((await h.call('GET', '/v1/annotation-queues', { key: noRead.key })).status).toBe(403);
  });
});

describe('reviewers', () => {
  it('counts two keys made by one key as two reviewers, each its own (key:<id>)', async () => {
    const made: { id: string; key: string }[] = [];
    for (const name of ['ann', 'ben']) {
      const res = await h.call('POST', '/v1/api-keys', {
        body: { name, permissions: ['review:*', 'logs:read'] },
      });
      expect(res.status, res.text).toBe(201);
      made.push(res.body);
    }
    const q = await h.call('POST', '/v1/annotation-queues', {
      body: { name: 'pair', evaluators: ['ordinal'], reviewers_per_item: 2 },
    });
    expect(q.status, q.text).toBe(201);
    const logs = await h.call('GET', '/v1/containers/c/logs');
    await h.call('POST', '/v1/annotation-queues/pair/items', { body: { task_logs: [logs.body.data[0].id] } });
    const item = (await h.call('GET', '/v1/annotation-queues/pair/items')).body.data[0].id;
    for (const [i, k] of made.entries()) {
      const res = await h.call('POST', `/v1/annotation-queues/pair/items/${item}/review`, {
        key: k.key,
        body: { scores: [{ evaluator: 'ordinal', score: 2 + i }] },
      });
      expect(res.status, res.text).toBe(201);
    }
    const reviews = await h.call('GET', '/v1/annotation-queues/pair/reviews');
    expect(reviews.body.data.map((r: { reviewer: string }) => r.reviewer).sort()).toEqual(
      made.map((k) => `key:${k.id}`).sort(),
    );
    expect((await h.call('GET', '/v1/annotation-queues/pair/items')).body.data[0].state).toBe('done');
  });
});

describe('review input', () => {
  it('answers 422 naming the score outside the scale', async () => {
    const item = await h.call('POST', '/v1/annotation-queues/q/items', {
      body: { sessions: [] },
    });
    expect(item.status).toBe(200);
    const res = await h.call('POST', `/v1/annotation-queues/q/items/${itemId}/review`, {
      key: (await h.key(['review:*'])).key,
      body: {
        scores: [
          { evaluator: 'ordinal', score: 7 },
          { evaluator: 'pf', score: 0.5 },
          { evaluator: 'nope', score: 1 },
        ],
      },
    });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
    expect(locs).toEqual(['body.scores.0.score', 'body.scores.1.score', 'body.scores.2.evaluator']);
    expect(res.body.detail[0].msg).toContain('outside the scale');
    expect(res.body.detail[0].msg).toContain('1..5');
    const fractional = await h.call('POST', `/v1/annotation-queues/q/items/${itemId}/review`, {
      body: { scores: [{ evaluator: 'ordinal', score: 2.5 }] },
    });
    expect(fractional.status).toBe(422);
  });

  it('answers 409 to a second review of a one-reviewer item and to a queue name taken', async () => {
    const res = await h.call('POST', `/v1/annotation-queues/q/items/${itemId}/review`, {
      key: (await h.key(['review:*'])).key,
      body: { scores: [{ evaluator: 'ordinal', score: 3 }] },
    });
    expect(res.status).toBe(409);
    const dup = await h.call('POST', '/v1/annotation-queues', {
      body: { name: 'q', evaluators: ['ordinal'] },
    });
    expect(dup.status).toBe(409);
  });

  it('rejects unknown references with 422 naming them', async () => {
    const res = await h.call('POST', '/v1/annotation-queues/q/items', {
      body: { task_logs: ['log_nope'], run_samples: [{ run: 'run_nope', position: 0 }] },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'task_logs', 0]);
    const rule = await h.call('POST', '/v1/annotation-queues/q/items', {
      body: { rules: [{ run: 'run_nope', failed: true }] },
    });
    expect(rule.status).toBe(422);
    const badQueue = await h.call('POST', '/v1/annotation-queues', {
      body: { name: 'z', evaluators: ['missing'] },
    });
    expect(badQueue.status).toBe(422);
    expect(badQueue.body.detail[0].loc).toEqual(['body', 'evaluators', 0]);
    const badScale = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', model: 'm', prompt: 'x {{output}}', scale: { type: 'ordinal', min: 5, max: 1 } },
    });
    expect(badScale.status).toBe(422);
    expect(badScale.body.detail[0].loc).toEqual(['body', 'scale']);
  });

  it('pages and counts a queue of 100,000 items in the database', async () => {
    const { db } = h.services;
    const q = await h.call('POST', '/v1/annotation-queues', {
      body: { name: 'big', evaluators: ['ordinal'] },
    });
    const now = new Date().toISOString();
    const rows = Array.from({ length: 100_000 }, (_, i) => ({
      id: `aqi_${String(i).padStart(8, '0')}`,
      queue_id: q.body.id,
      kind: 'task_log',
      ref: `log_${i}`,
      run_id: null,
      launch_index: null,
      position: null,
      source: 'api',
      state: i % 10 === 0 ? 'done' : 'open',
      needed: 1,
      taken: i % 10 === 0 ? 1 : 0,
      reviews: i % 10 === 0 ? 1 : 0,
      flag: null,
      created_at: now,
      updated_at: now,
    }));
    for (let i = 0; i < rows.length; i += 2000) {
      await db
        .insertInto('annotation_items')
        .values(rows.slice(i, i + 2000))
        .execute();
    }
    const got = await h.call('GET', '/v1/annotation-queues/big');
    expect(got.body.counts).toMatchObject({ total: 100_000, open: 90_000, done: 10_000 });
    const page = await h.call('GET', '/v1/annotation-queues/big/items?state=open&limit=3&offset=89998');
    expect(page.body.total).toBe(90_000);
    expect(page.body.data.map((r: { id: string }) => r.id)).toEqual(['aqi_00099998', 'aqi_00099999']);
    const claim = await h.call('POST', '/v1/annotation-queues/big/claim');
    expect(claim.body.item.item.id).toBe('aqi_00000001');
    expect(claim.body.remaining).toBe(89_999);
  });
});
